//! Thumbnails of images made here: JPEGs by jpeg-encoder, PNGs by the png crate's encoder or
//! by hand where it cannot write them (interlaced, lying headers).

use super::*;

/// A `w` × `h` RGB gradient: red grows to the right, green downwards.
fn gradient(w: u32, h: u32) -> Vec<u8> {
    let mut px = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            px.extend([(x * 255 / (w - 1)) as u8, (y * 255 / (h - 1)) as u8, 128]);
        }
    }
    px
}

fn jpeg_of(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    Encoder::new(&mut out, 90)
        .encode(&gradient(w, h), w as u16, h as u16, ColorType::Rgb)
        .unwrap();
    out
}

fn png_of(w: u32, h: u32, color: png::ColorType, px: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = png::Encoder::new(&mut out, w, h);
    e.set_color(color);
    e.set_depth(png::BitDepth::Eight);
    let mut writer = e.write_header().unwrap();
    writer.write_image_data(px).unwrap();
    writer.finish().unwrap();
    out
}

/// Decode a thumbnail: (width, height, RGB pixels).
fn decoded(t: &Thumbnail) -> (usize, usize, Vec<u8>) {
    assert!(t.jpeg.starts_with(&[0xFF, 0xD8]), "a JPEG");
    // Baseline (SOF0), which every client decodes; never progressive.
    assert!(t.jpeg.windows(2).any(|m| m == [0xFF, 0xC0]));
    assert!(!t.jpeg.windows(2).any(|m| m == [0xFF, 0xC2]));
    let mut d = JpegDecoder::new(ZCursor::new(&t.jpeg));
    let px = d.decode().unwrap();
    let (w, h) = d.dimensions().unwrap();
    (w, h, px)
}

#[test]
fn a_jpeg_shrinks_to_100_pixels_on_its_longer_side() {
    let t = try_make(&jpeg_of(400, 300)).unwrap();
    assert_eq!((t.width, t.height), (400, 300));
    let (w, h, px) = decoded(&t);
    assert_eq!((w, h), (100, 75));
    // The picture is the same one: dark red on the left, bright on the right, green downwards.
    let at = |x: usize, y: usize| &px[(y * w + x) * 3..(y * w + x) * 3 + 3];
    assert!(
        at(0, 0)[0] < 40 && at(99, 0)[0] > 215,
        "{:?} {:?}",
        at(0, 0),
        at(99, 0)
    );
    assert!(
        at(0, 0)[1] < 40 && at(0, 74)[1] > 215,
        "{:?} {:?}",
        at(0, 0),
        at(0, 74)
    );
}

#[test]
fn a_png_shrinks_and_its_transparency_lies_on_white() {
    // 300 × 600, RGBA: the top half fully transparent, the bottom opaque black.
    let (w, h) = (300u32, 600u32);
    let mut px = Vec::new();
    for y in 0..h {
        for _ in 0..w {
            px.extend(if y < h / 2 {
                [0, 0, 0, 0]
            } else {
                [0, 0, 0, 255]
            });
        }
    }
    let t = try_make(&png_of(w, h, png::ColorType::Rgba, &px)).unwrap();
    assert_eq!((t.width, t.height), (300, 600));
    let (tw, th, px) = decoded(&t);
    assert_eq!((tw, th), (50, 100));
    assert!(
        px[..3].iter().all(|&v| v > 240),
        "white on top: {:?}",
        &px[..3]
    );
    let last = px.len() - 3;
    assert!(
        px[last..].iter().all(|&v| v < 15),
        "black below: {:?}",
        &px[last..]
    );
}

#[test]
fn a_small_image_keeps_its_size() {
    let t = try_make(&jpeg_of(40, 30)).unwrap();
    assert_eq!((t.width, t.height), (40, 30));
    assert_eq!(decoded(&t).0, 40);
    assert_eq!(decoded(&t).1, 30);
    let grey = png_of(7, 3, png::ColorType::Grayscale, &[200; 21]);
    let (w, h, px) = decoded(&try_make(&grey).unwrap());
    assert_eq!((w, h), (7, 3));
    assert!(px.iter().all(|v| v.abs_diff(200) < 6), "{px:?}");
}

#[test]
fn garbage_and_other_formats_get_none() {
    assert_eq!(make(b"not an image at all"), None);
    assert_eq!(try_make(b"RIFF\0\0\0\0WEBPVP8 "), Err(Skip::Format));
    // Right signatures, nothing behind them.
    assert_eq!(
        try_make(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]),
        Err(Skip::Corrupt)
    );
    assert_eq!(
        try_make(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        Err(Skip::Corrupt)
    );
}

#[test]
fn a_header_claiming_a_huge_image_is_refused_before_decoding() {
    // A real 16 × 16 JPEG whose frame header now says 65,535 × 65,535 (4.3 gigapixels).
    let mut jpeg = jpeg_of(16, 16);
    let sof = jpeg.windows(2).position(|m| m == [0xFF, 0xC0]).unwrap();
    jpeg[sof + 5..sof + 9].copy_from_slice(&[0xFF; 4]);
    assert_eq!(try_make(&jpeg), Err(Skip::TooLarge));
    assert_eq!(make(&jpeg), None);
    // A PNG header (with a valid checksum) saying 60,000 × 60,000, and a few bytes of data.
    let png = png_by_hand(60_000, 60_000, 0, &[0; 8]);
    assert_eq!(try_make(&png), Err(Skip::TooLarge));
    // Just above the limit is refused, just below is decoded (and fails only on its data).
    assert_eq!(
        try_make(&png_by_hand(10_000, 5_001, 0, &[0; 8])),
        Err(Skip::TooLarge)
    );
    assert_eq!(
        try_make(&png_by_hand(10_000, 5_000, 0, &[0; 8])),
        Err(Skip::Corrupt)
    );
}

#[test]
fn an_interlaced_png_is_decoded_whole() {
    // 2 × 2 RGB in Adam7: pass 1 has (0,0), pass 6 has (1,0), pass 7 row 1; each reduced row
    // is a filter byte (0) and its pixels.
    let (a, b, c, d) = ([10, 20, 30], [40, 50, 60], [70, 80, 90], [100, 110, 120]);
    let raw: Vec<u8> = [&[0][..], &a, &[0], &b, &[0], &c, &d].concat();
    let t = try_make(&png_by_hand(2, 2, 1, &raw)).unwrap();
    let (w, h, px) = decoded(&t);
    assert_eq!((w, h), (2, 2));
    for (got, want) in px.chunks(3).zip([a, b, c, d]) {
        assert!(
            got.iter().zip(want).all(|(g, w)| g.abs_diff(w) < 12),
            "{got:?} ≈ {want:?}"
        );
    }
}

#[tokio::test]
async fn off_thread_gives_the_same_thumbnail() {
    let jpeg = jpeg_of(250, 250);
    let t = make_off_thread(Bytes::from(jpeg.clone())).await.unwrap();
    assert_eq!(Some(t), make(&jpeg));
    assert_eq!(make_off_thread(Bytes::from_static(b"junk")).await, None);
}

/// A PNG of 8-bit RGB with `raw` (already filtered scanlines) stored uncompressed.
fn png_by_hand(w: u32, h: u32, interlace: u8, raw: &[u8]) -> Vec<u8> {
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, interlace]);
    // zlib: a header, one stored deflate block, the Adler-32 of the data.
    let mut z = vec![0x78, 0x01, 0x01];
    z.extend((raw.len() as u16).to_le_bytes());
    z.extend((!(raw.len() as u16)).to_le_bytes());
    z.extend(raw);
    let (mut s1, mut s2) = (1u32, 0u32);
    for &v in raw {
        s1 = (s1 + u32::from(v)) % 65521;
        s2 = (s2 + s1) % 65521;
    }
    z.extend(((s2 << 16) | s1).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, body) in [(b"IHDR", &ihdr), (b"IDAT", &z), (b"IEND", &Vec::new())] {
        out.extend((body.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend(kind);
        out.extend(body);
        let crc = crc32(&out[start..]);
        out.extend(crc.to_be_bytes());
    }
    out
}

/// CRC-32 (IEEE), bit by bit: PNG's chunk checksum.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}
