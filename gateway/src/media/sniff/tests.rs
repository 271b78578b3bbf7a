//! Each container recognised, and the lookalikes and malformed files refused.

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
    assert_eq!(sniff(&ogg_opus()), Container::OggOpus);
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
    // OpusHead with 0 channels, or of another version (each page's CRC right).
    for (at, value) in [(37, 0), (36, 2)] {
        let mut bad = ogg(b"OpusHead");
        bad[at] = value;
        assert_eq!(
            sniff(&with_crc(bad)),
            Container::Unknown,
            "byte {at} = {value}"
        );
    }
}

#[test]
fn containers_are_walked_to_their_end() {
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
    // MP4: a box past the data, no `moov`, bytes after the last box.
    let mp4 = mp4(b"isom", &[]);
    let mut overrun = mp4.clone();
    let last = overrun.len() - 5;
    overrun[last] = 9;
    cases.push(("MP4 box overrun", overrun));
    let mut no_moov = mp4.clone();
    let moov = no_moov.len() - 12;
    no_moov[moov..moov + 4].copy_from_slice(b"free");
    cases.push(("MP4 without moov", no_moov));
    let mut trailing = mp4.clone();
    trailing.extend_from_slice(b"PK\x03");
    cases.push(("MP4 with bytes after its last box", trailing));
    // Ogg: a CRC that does not match, a first page that does not begin the stream or
    // continues a packet, a second page cut short, bytes after the last page.
    let opus = ogg_opus();
    let mut bad_crc = opus.clone();
    bad_crc[22] ^= 1;
    cases.push(("Ogg page with a wrong CRC", bad_crc));
    let mut bad_body = opus.clone();
    bad_body[40] ^= 1;
    cases.push(("Ogg page changed under its CRC", bad_body));
    for (name, flags) in [("Ogg without BOS", 0x00), ("Ogg continuing a packet", 0x03)] {
        let mut page = ogg(b"OpusHead");
        page[5] = flags;
        cases.push((name, with_crc(page)));
    }
    cases.push(("Ogg second page cut short", opus[..opus.len() - 3].to_vec()));
    let mut trailing = opus.clone();
    trailing.extend_from_slice(b"PK\x03\x04rest of an archive");
    cases.push(("Ogg+ZIP", trailing));
    for (name, bytes) in cases {
        assert_eq!(sniff(&bytes), Container::Unknown, "{name}");
    }
}

/// One Ogg page with its CRC set again after a test changed it.
fn with_crc(mut page: Vec<u8>) -> Vec<u8> {
    let crc = ogg::crc(&page);
    page[22..26].copy_from_slice(&crc.to_le_bytes());
    page
}
