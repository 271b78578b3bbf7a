//! What container the bytes really are (DESIGN §5): JPEG, PNG, MP4 (video or audio brands), Ogg
//! with an `OpusHead` first packet, MP3. JPEG and PNG are walked to their end — every segment
//! or chunk within the data, the end marker last, nothing after it (a file that is also another
//! format, a polyglot, is refused) — so what WhatsApp is handed is an image, not just its first
//! bytes. MP4 is walked box by box and Ogg page by page (CRC checked) in the same way; Opus
//! needs a whole `OpusHead`, MP3 a valid frame header after any whole ID3v2 tag. Anything else is
//! [`Container::Unknown`].

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
    /// Whole Ogg pages (each CRC right, nothing after the last), the first beginning the
    /// stream with one whole `OpusHead` packet.
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
    } else if let Some(brands) = ftyp_brands(bytes).filter(|_| mp4_boxes_whole(bytes)) {
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

/// The top-level boxes of an ISO-BMFF file: each within the data (a 64-bit size when the size
/// is 1; a size of 0 runs to the end), the last one ending it, a `moov` among them.
fn mp4_boxes_whole(bytes: &[u8]) -> bool {
    let (mut at, mut moov) = (0usize, false);
    while at < bytes.len() {
        let Some(header) = bytes.get(at..at + 8) else {
            return false;
        };
        let size = match u32::from_be_bytes([header[0], header[1], header[2], header[3]]) {
            0 => bytes.len() - at,
            1 => match bytes.get(at + 8..at + 16) {
                Some(large) => {
                    match usize::try_from(u64::from_be_bytes(large.try_into().expect("8 bytes"))) {
                        Ok(n) if n >= 16 => n,
                        _ => return false,
                    }
                }
                None => return false,
            },
            n if n >= 8 => n as usize,
            _ => return false,
        };
        moov |= &header[4..8] == b"moov";
        match at.checked_add(size) {
            Some(end) if end <= bytes.len() => at = end,
            _ => return false,
        }
    }
    moov
}

/// The first packet of an Ogg stream ([`ogg`]), when the data is whole Ogg pages.
fn ogg_first_packet(bytes: &[u8]) -> Option<&[u8]> {
    ogg::first_packet(bytes)
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

pub mod fixtures;
pub(crate) mod ogg;

#[cfg(test)]
mod tests;
