//! Ogg pages (RFC 3533), walked to the end of the data: each page is `OggS`, version 0, known
//! header flags, its segment table and body within the data and its CRC right; the pages cover
//! the data exactly (bytes after the last page would be another file: a polyglot). The first
//! page begins the stream and its first packet ends on it (RFC 7845 gives the identification
//! header a page of its own).

/// Length of a page header before its segment table.
const HEADER: usize = 27;
/// Where a page keeps its CRC.
const CRC_AT: std::ops::Range<usize> = 22..26;
/// Header-type flags: continued packet, beginning of stream, end of stream.
const CONTINUED: u8 = 0x01;
const BOS: u8 = 0x02;
const KNOWN_FLAGS: u8 = 0x07;

/// The stream's first packet, when `bytes` are whole, valid Ogg pages and the first begins the
/// stream with a packet that ends on it.
pub(crate) fn first_packet(bytes: &[u8]) -> Option<&[u8]> {
    let first = page(bytes)?;
    if first.flags & BOS == 0 || first.flags & CONTINUED != 0 {
        return None;
    }
    let mut rest = &bytes[first.len..];
    while !rest.is_empty() {
        rest = &rest[page(rest)?.len..];
    }
    let ends = first.table.iter().position(|&l| l < 255)?;
    let len = first.table[..=ends].iter().map(|&l| usize::from(l)).sum();
    first.body.get(..len)
}

/// One page at the start of `bytes`.
struct Page<'a> {
    flags: u8,
    table: &'a [u8],
    body: &'a [u8],
    /// The whole page's length.
    len: usize,
}

fn page(bytes: &[u8]) -> Option<Page<'_>> {
    if !bytes.starts_with(b"OggS") || *bytes.get(4)? != 0 {
        return None;
    }
    // `get`, not `bytes[5]`: "OggS" and a version byte alone are only five bytes.
    let flags = *bytes.get(5)?;
    if flags & !KNOWN_FLAGS != 0 {
        return None;
    }
    let segments = usize::from(*bytes.get(HEADER - 1)?);
    let table = bytes.get(HEADER..HEADER + segments)?;
    let body_len: usize = table.iter().map(|&l| usize::from(l)).sum();
    let len = HEADER + segments + body_len;
    let whole = bytes.get(..len)?;
    let stored = u32::from_le_bytes(whole[CRC_AT].try_into().ok()?);
    (crc(whole) == stored).then(|| Page {
        flags,
        table,
        body: &whole[HEADER + segments..],
        len,
    })
}

/// Ogg's CRC-32 of a page (polynomial 0x04C11DB7, MSB first, no reflection, initial value and
/// final XOR 0), its own CRC field counted as zeros.
pub(crate) fn crc(page: &[u8]) -> u32 {
    page.iter().enumerate().fold(0u32, |crc, (i, &b)| {
        let b = if CRC_AT.contains(&i) { 0 } else { b };
        (crc << 8) ^ TABLE[usize::from((crc >> 24) as u8 ^ b)]
    })
}

static TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut r = (i as u32) << 24;
        let mut bit = 0;
        while bit < 8 {
            r = if r & 0x8000_0000 != 0 {
                (r << 1) ^ 0x04C1_1DB7
            } else {
                r << 1
            };
            bit += 1;
        }
        table[i] = r;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_oggs() {
        // Polynomial 0x04C11DB7, initial value 0, no reflection, no final XOR: the check value
        // over "123456789" (computed bit by bit, independently of the table).
        assert_eq!(crc(b"123456789"), 0x89A1_897F);
        assert_eq!(crc(b""), 0);
    }

    /// Regression (the `media` fuzz target, its first crash, in under a second): a page cut
    /// after its version byte indexed past the end, first or after a whole page.
    #[test]
    fn a_page_cut_after_its_version_is_no_page() {
        for cut in [&b"OggS\0"[..], b"OggS", b"OggS\0\x02"] {
            assert!(page(cut).is_none(), "{cut:?}");
            assert!(first_packet(cut).is_none(), "{cut:?}");
        }
        let mut after_a_page = super::super::fixtures::ogg(b"OpusHead");
        after_a_page.extend_from_slice(b"OggS\0");
        assert!(first_packet(&after_a_page).is_none());
    }
}
