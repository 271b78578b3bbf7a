//! What container the bytes really are (DESIGN §5): JPEG, PNG, MP4 (video or audio brands), Ogg
//! with an `OpusHead` first packet, MP3. JPEG and PNG are walked to their end — every segment
//! or chunk within the data, the end marker last, nothing after it (a file that is also another
//! format, a polyglot, is refused) — so what WhatsApp is handed is an image, not just its first
//! bytes; the others are recognised by their headers. Anything else is [`Container::Unknown`].

/// A recognised container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Container {
    /// SOI, a chain of whole segments (entropy-coded data after SOS), EOI at the very end.
    Jpeg,
    /// The PNG signature, `IHDR` (13 bytes) first, whole chunks, `IEND` at the very end.
    Png,
    /// An ISO-BMFF `ftyp` box with a video brand.
    Mp4Video,
    /// An ISO-BMFF `ftyp` box with an M4A-family (audio-only) brand.
    Mp4Audio,
    /// An Ogg first page whose first packet is `OpusHead`.
    OggOpus,
    /// An ID3 tag or an MPEG audio frame sync.
    Mp3,
    /// Anything else (including Ogg without Opus).
    Unknown,
}

/// `ftyp` brands of audio-only MP4 files.
const AUDIO_BRANDS: [&[u8; 4]; 4] = [b"M4A ", b"M4B ", b"M4P ", b"F4A "];
/// `ftyp` brands of MP4 video files.
const VIDEO_BRANDS: [&[u8; 4]; 13] = [
    b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1", b"M4V ",
    b"dash", b"mmp4", b"MSNV",
];

/// The container of `bytes`.
pub(crate) fn sniff(bytes: &[u8]) -> Container {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        if jpeg_complete(bytes) {
            Container::Jpeg
        } else {
            Container::Unknown
        }
    } else if let Some(chunks) = bytes.strip_prefix(PNG_SIGNATURE) {
        if png_complete(chunks) {
            Container::Png
        } else {
            Container::Unknown
        }
    } else if let Some(brands) = ftyp_brands(bytes) {
        // The major brand decides; an unknown major brand falls back to the compatible list.
        let is = |list: &[&[u8; 4]], b: &[u8]| list.iter().any(|x| x.as_slice() == b);
        let major = brands[0];
        if is(&AUDIO_BRANDS, major) {
            Container::Mp4Audio
        } else if is(&VIDEO_BRANDS, major) {
            Container::Mp4Video
        } else if brands[1..].iter().any(|b| is(&AUDIO_BRANDS, b)) {
            Container::Mp4Audio
        } else if brands[1..].iter().any(|b| is(&VIDEO_BRANDS, b)) {
            Container::Mp4Video
        } else {
            Container::Unknown
        }
    } else if bytes.starts_with(b"OggS") {
        if ogg_first_packet(bytes).is_some_and(is_opus_head) {
            Container::OggOpus
        } else {
            Container::Unknown
        }
    } else if after_id3(bytes).is_some_and(is_mpeg_audio_frame) {
        Container::Mp3
    } else {
        Container::Unknown
    }
}

const PNG_SIGNATURE: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// PNG chunks after the signature: `IHDR` of 13 bytes first, each chunk (length, type, data,
/// CRC) within the data, `IEND` (empty) last and ending the data. CRCs are not checked: a
/// damaged chunk is the decoder's problem, not a disguise.
fn png_complete(mut chunks: &[u8]) -> bool {
    let mut first = true;
    loop {
        let Some(header) = chunks.get(..8) else {
            return false;
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let Some(rest) = len.checked_add(12).and_then(|whole| chunks.get(whole..)) else {
            return false;
        };
        if first && (kind != b"IHDR" || len != 13) {
            return false;
        }
        if kind == b"IEND" {
            return len == 0 && rest.is_empty();
        }
        first = false;
        chunks = rest;
    }
}

/// A JPEG from SOI to EOI: after SOI, markers (fill bytes `FF` allowed) each followed by a
/// segment whose length stays within the data — standalone markers (`TEM`, `RSTn`) have none —
/// and after each SOS the entropy-coded data up to the next marker that is not a stuffed
/// `FF 00` or a restart; EOI must end the data.
fn jpeg_complete(bytes: &[u8]) -> bool {
    let mut i = 2;
    loop {
        // A marker: one or more FF, then its code.
        if bytes.get(i) != Some(&0xFF) {
            return false;
        }
        while bytes.get(i) == Some(&0xFF) {
            i += 1;
        }
        let Some(&code) = bytes.get(i) else {
            return false;
        };
        i += 1;
        match code {
            0xD9 => return i == bytes.len(),
            0x01 | 0xD0..=0xD7 => continue,
            0x00 | 0xD8 => return false,
            _ => {}
        }
        let Some(len) = bytes
            .get(i..i + 2)
            .map(|l| usize::from(l[0]) << 8 | usize::from(l[1]))
        else {
            return false;
        };
        if len < 2 || i + len > bytes.len() {
            return false;
        }
        i += len;
        if code == 0xDA {
            // Entropy-coded data: up to a marker other than a stuffed zero or a restart.
            loop {
                let Some(at) = bytes[i..].iter().position(|&b| b == 0xFF) else {
                    return false;
                };
                i += at;
                match bytes.get(i + 1) {
                    Some(0x00 | 0xD0..=0xD7) => i += 2,
                    Some(_) => break,
                    None => return false,
                }
            }
        }
    }
}

/// The major brand then the compatible brands of a leading `ftyp` box.
fn ftyp_brands(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    if bytes.len() < 16 || &bytes[4..8] != b"ftyp" {
        return None;
    }
    let size = u32::from_be_bytes(bytes[0..4].try_into().ok()?) as usize;
    if size < 16 || size > bytes.len() || !size.is_multiple_of(4) {
        return None;
    }
    let mut brands = vec![&bytes[8..12]];
    brands.extend(bytes[16..size].chunks_exact(4));
    Some(brands)
}

/// The first packet (or its first part) of an Ogg beginning-of-stream page.
fn ogg_first_packet(bytes: &[u8]) -> Option<&[u8]> {
    // capture "OggS", version 0, header type with the BOS flag, …, segment count at 26.
    let header_type = *bytes.get(5)?;
    if *bytes.get(4)? != 0 || header_type & 0x02 == 0 {
        return None;
    }
    let segments = *bytes.get(26)? as usize;
    let table = bytes.get(27..27 + segments)?;
    let first_len: usize = table
        .iter()
        .position(|&l| l < 255)
        .map_or(segments * 255, |i| i * 255 + table[i] as usize);
    let start = 27 + segments;
    bytes.get(start..start + first_len)
}

/// An Opus identification header (RFC 7845 §5.1): `OpusHead`, version 1, at least one channel,
/// its 19 bytes whole.
fn is_opus_head(packet: &[u8]) -> bool {
    packet.len() >= 19 && packet.starts_with(b"OpusHead") && packet[8] == 1 && packet[9] >= 1
}

/// The bytes after a leading ID3v2 tag (its 10-byte header, its syncsafe size, a footer when
/// flagged), or all of them when there is none; `None` for a tag that is not whole.
fn after_id3(bytes: &[u8]) -> Option<&[u8]> {
    if !bytes.starts_with(b"ID3") {
        return Some(bytes);
    }
    let header = bytes.get(..10)?;
    let size = header[6..10].iter().try_fold(0usize, |n, &b| {
        (b < 0x80).then_some(n << 7 | usize::from(b))
    })?;
    let footer = if header[5] & 0x10 != 0 { 10 } else { 0 };
    bytes.get(10 + size + footer..)
}

/// An MPEG-1/2 layer III frame header at the start (sync, valid version, layer, bitrate and
/// sample rate).
fn is_mpeg_audio_frame(bytes: &[u8]) -> bool {
    let [a, b, c, ..] = bytes else { return false };
    let sync = *a == 0xFF && b & 0xE0 == 0xE0;
    let version_ok = (b >> 3) & 0b11 != 0b01;
    let layer_iii = (b >> 1) & 0b11 == 0b01;
    let bitrate_ok = !matches!(c >> 4, 0b0000 | 0b1111);
    let rate_ok = (c >> 2) & 0b11 != 0b11;
    sync && version_ok && layer_iii && bitrate_ok && rate_ok
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Tiny real files, built byte by byte as their formats specify.

    /// A JPEG: SOI, an APP0/JFIF segment, EOI (the header is what matters).
    pub(crate) fn jpeg() -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        v.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        v.extend_from_slice(&[0xFF, 0xD9]);
        v
    }

    /// A PNG signature, an IHDR chunk, an (empty) IDAT chunk and IEND.
    pub(crate) fn png() -> Vec<u8> {
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

    /// An `ftyp` box with `major` and `compatible` brands, then an empty `mdat` box.
    pub(crate) fn mp4(major: &[u8; 4], compatible: &[&[u8; 4]]) -> Vec<u8> {
        let size = 16 + 4 * compatible.len() as u32;
        let mut v = size.to_be_bytes().to_vec();
        v.extend_from_slice(b"ftyp");
        v.extend_from_slice(major);
        v.extend_from_slice(&[0, 0, 2, 0]);
        for b in compatible {
            v.extend_from_slice(*b);
        }
        v.extend_from_slice(&[0, 0, 0, 8]);
        v.extend_from_slice(b"mdat");
        v
    }

    /// An Ogg beginning-of-stream page whose one packet starts with `head` (e.g. `OpusHead`).
    pub(crate) fn ogg(head: &[u8; 8]) -> Vec<u8> {
        let mut packet = head.to_vec();
        packet.extend_from_slice(&[1, 1, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]);
        let mut v = b"OggS".to_vec();
        v.extend_from_slice(&[0, 0x02]);
        v.extend_from_slice(&[0; 8]); // granule position
        v.extend_from_slice(&[0x57, 0x41, 0x5A, 0x50]); // serial
        v.extend_from_slice(&[0; 4]); // sequence
        v.extend_from_slice(&[0; 4]); // CRC (not checked)
        v.push(1);
        v.push(packet.len() as u8);
        v.extend_from_slice(&packet);
        v
    }

    /// An MPEG-1 layer III frame header (128 kbit/s, 44.1 kHz) and some zero bytes.
    pub(crate) fn mp3_frame() -> Vec<u8> {
        let mut v = vec![0xFF, 0xFB, 0x90, 0x64];
        v.extend_from_slice(&[0; 32]);
        v
    }

    /// An ID3v2 tag header.
    pub(crate) fn mp3_id3() -> Vec<u8> {
        let mut v = b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec();
        v.extend_from_slice(&mp3_frame());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn recognises_each_container() {
        assert_eq!(sniff(&jpeg()), Container::Jpeg);
        assert_eq!(sniff(&png()), Container::Png);
        assert_eq!(
            sniff(&mp4(b"isom", &[b"isom", b"avc1"])),
            Container::Mp4Video
        );
        assert_eq!(sniff(&mp4(b"mp42", &[])), Container::Mp4Video);
        assert_eq!(
            sniff(&mp4(b"M4A ", &[b"M4A ", b"mp42"])),
            Container::Mp4Audio
        );
        assert_eq!(sniff(&mp4(b"abcd", &[b"M4A "])), Container::Mp4Audio);
        assert_eq!(sniff(&ogg(b"OpusHead")), Container::OggOpus);
        assert_eq!(sniff(&mp3_frame()), Container::Mp3);
        assert_eq!(sniff(&mp3_id3()), Container::Mp3);
    }

    #[test]
    fn refuses_lookalikes() {
        assert_eq!(sniff(&ogg(b"\x01vorbis\0")), Container::Unknown);
        assert_eq!(sniff(&mp4(b"abcd", &[b"wxyz"])), Container::Unknown);
        let mut truncated = mp4(b"isom", &[]);
        truncated[3] = 200; // box larger than the file
        assert_eq!(sniff(&truncated), Container::Unknown);
        let mut no_bos = ogg(b"OpusHead");
        no_bos[5] = 0;
        assert_eq!(sniff(&no_bos), Container::Unknown);
        assert_eq!(sniff(&ogg(b"OpusHead")[..30]), Container::Unknown);
        assert_eq!(sniff(b"%PDF-1.7\n"), Container::Unknown);
        assert_eq!(sniff(&[0xFF, 0xD8]), Container::Unknown);
        assert_eq!(sniff(&[0xFF, 0xFF, 0xFF, 0xFF]), Container::Unknown);
        assert_eq!(sniff(b""), Container::Unknown);
        // An ID3 tag with no MPEG frame after it; one whose size runs past the data.
        assert_eq!(sniff(&mp3_id3()[..10]), Container::Unknown);
        let mut long_tag = mp3_id3();
        long_tag[9] = 0x7F;
        assert_eq!(sniff(&long_tag), Container::Unknown);
        // OpusHead with 0 channels, or of another version.
        for (at, value) in [(37, 0), (36, 2)] {
            let mut bad = ogg(b"OpusHead");
            bad[at] = value;
            assert_eq!(sniff(&bad), Container::Unknown, "byte {at} = {value}");
        }
    }

    #[test]
    fn jpeg_and_png_are_walked_to_their_end() {
        let jpeg = jpeg();
        let png = png();
        let mut cases: Vec<(&str, Vec<u8>)> = vec![
            ("JPEG without EOI", jpeg[..jpeg.len() - 2].to_vec()),
            ("PNG without IEND", png[..png.len() - 12].to_vec()),
            ("PNG with a truncated IHDR", png[..20].to_vec()),
        ];
        // A segment longer than the data.
        let mut overrun = jpeg.clone();
        overrun[5] = 0xF0;
        cases.push(("JPEG segment overrun", overrun));
        // A PNG whose first chunk is not IHDR.
        let mut no_ihdr = png.clone();
        no_ihdr[12..16].copy_from_slice(b"IDAT");
        cases.push(("PNG without IHDR first", no_ihdr));
        // Polyglots: a ZIP after the image's end.
        for (name, image) in [("JPEG+ZIP", &jpeg), ("PNG+ZIP", &png)] {
            let mut polyglot = image.clone();
            polyglot.extend_from_slice(b"PK\x03\x04rest of an archive");
            cases.push((name, polyglot));
        }
        for (name, bytes) in cases {
            assert_eq!(sniff(&bytes), Container::Unknown, "{name}");
        }
    }
}
