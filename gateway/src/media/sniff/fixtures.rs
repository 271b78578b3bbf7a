//! Tiny real files, built byte by byte as their formats specify: the sniffer's unit tests, the
//! gateway's integration tests and the e2e harness send these (re-exported, hidden from the
//! docs, as `wazap_gateway::media_fixtures`; not an API).

/// A JPEG: SOI, an APP0/JFIF segment, EOI.
pub fn jpeg() -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    v.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    v.extend_from_slice(&[0xFF, 0xD9]);
    v
}

/// A PNG signature, an IHDR chunk, an (empty) IDAT chunk and IEND.
pub fn png() -> Vec<u8> {
    let mut v = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    v.extend_from_slice(&[0, 0, 0, 13]);
    v.extend_from_slice(b"IHDR");
    v.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
    v.extend_from_slice(&[0x90, 0x77, 0x53, 0xDE]);
    v.extend_from_slice(&[0, 0, 0, 0]);
    v.extend_from_slice(b"IDAT");
    v.extend_from_slice(&[0x35, 0xAF, 0x06, 0x1E]);
    v.extend_from_slice(&[0, 0, 0, 0]);
    v.extend_from_slice(b"IEND");
    v.extend_from_slice(&[0xAE, 0x42, 0x60, 0x82]);
    v
}

/// An `ftyp` box with `major` and `compatible` brands, an empty `moov` box and an empty
/// `mdat` box.
pub fn mp4(major: &[u8; 4], compatible: &[&[u8; 4]]) -> Vec<u8> {
    let size = 16 + 4 * compatible.len() as u32;
    let mut v = size.to_be_bytes().to_vec();
    v.extend_from_slice(b"ftyp");
    v.extend_from_slice(major);
    v.extend_from_slice(&[0, 0, 2, 0]);
    for b in compatible {
        v.extend_from_slice(*b);
    }
    v.extend_from_slice(&[0, 0, 0, 8]);
    v.extend_from_slice(b"moov");
    v.extend_from_slice(&[0, 0, 0, 8]);
    v.extend_from_slice(b"mdat");
    v
}

/// One Ogg page of stream `WAZP` with header flags `flags` (0x02 begins the stream), page
/// number `sequence` and one whole `packet` (under 255 bytes), its CRC set.
pub fn ogg_page(flags: u8, sequence: u32, packet: &[u8]) -> Vec<u8> {
    assert!(packet.len() < 255, "one lacing value");
    let mut v = b"OggS".to_vec();
    v.extend_from_slice(&[0, flags]);
    v.extend_from_slice(&[0; 8]); // granule position
    v.extend_from_slice(b"WAZP"); // serial
    v.extend_from_slice(&sequence.to_le_bytes());
    v.extend_from_slice(&[0; 4]); // CRC, set below
    v.push(1);
    v.push(packet.len() as u8);
    v.extend_from_slice(packet);
    let crc = super::ogg::crc(&v);
    v[22..26].copy_from_slice(&crc.to_le_bytes());
    v
}

/// An Ogg beginning-of-stream page whose one packet is an identification header starting with
/// `head` (`OpusHead`: version 1, one channel, 48 kHz).
pub fn ogg(head: &[u8; 8]) -> Vec<u8> {
    let mut packet = head.to_vec();
    packet.extend_from_slice(&[1, 1, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]);
    ogg_page(0x02, 0, &packet)
}

/// A voice note as an encoder writes its start: the `OpusHead` page, then an `OpusTags` page.
pub fn ogg_opus() -> Vec<u8> {
    let mut v = ogg(b"OpusHead");
    v.extend_from_slice(&ogg_page(0, 1, b"OpusTags\x05\0\0\0wazap\0\0\0\0"));
    v
}

/// An MPEG-1 layer III frame header (128 kbit/s, 44.1 kHz) and some zero bytes.
pub fn mp3_frame() -> Vec<u8> {
    let mut v = vec![0xFF, 0xFB, 0x90, 0x64];
    v.extend_from_slice(&[0; 32]);
    v
}

/// An ID3v2 tag header.
pub fn mp3_id3() -> Vec<u8> {
    let mut v = b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec();
    v.extend_from_slice(&mp3_frame());
    v
}
