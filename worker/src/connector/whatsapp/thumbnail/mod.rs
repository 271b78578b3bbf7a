//! The small JPEG WhatsApp shows for a photo before it is downloaded (`ImageMessage.
//! jpeg_thumbnail`), made from an outgoing image: decoded, shrunk by an area filter so the
//! longer side is at most [`LONGEST_SIDE`] pixels, and encoded as a baseline JPEG; with it the
//! full image's width and height, which clients use to size the bubble before the download.
//!
//! What it decodes: JPEG and PNG, the two image types the gateway accepts (DESIGN §5). Anything
//! else (e.g. WebP, should the gateway ever let it through) gets no thumbnail: a photo without
//! one still arrives, it only previews late, while every decoder is code an attacker's bytes run
//! through. Video gets none either: a frame needs a video decoder the worker does not carry.
//!
//! A thumbnail is a nicety, so nothing here fails a send: an image that cannot be decoded, or
//! whose header names more than [`MAX_PIXELS`] (read before anything is allocated for the
//! pixels: a small file can claim a huge image), simply has no thumbnail, logged at debug with
//! the reason only. Decoding is CPU work: [`make_off_thread`] runs it on the blocking pool, one
//! at a time, so concurrent sends never hold several full-size images in memory at once.

mod shrink;
#[cfg(test)]
mod tests;

use std::io::Cursor;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use jpeg_encoder::{ColorType, Encoder};
use tokio::sync::Semaphore;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use self::shrink::{Layout, Shrink, target};

/// The thumbnail's longer side, in pixels (WhatsApp's own are about this size).
pub const LONGEST_SIDE: u32 = 100;
/// The largest image (width × height) decoded: 50 megapixels, above any phone camera's photo;
/// at 3 bytes per pixel a JPEG that size holds 150 MB while it is shrunk.
pub const MAX_PIXELS: u64 = 50_000_000;
/// The thumbnail's JPEG quality.
const QUALITY: u8 = 75;

/// A thumbnail and the size of the image it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thumbnail {
    /// The baseline JPEG.
    pub jpeg: Vec<u8>,
    /// The full image's width in pixels.
    pub width: u32,
    /// The full image's height in pixels.
    pub height: u32,
}

/// Why an image got no thumbnail (logged; never the bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Skip {
    /// Neither JPEG nor PNG.
    #[error("not a JPEG or PNG image")]
    Format,
    /// The header names more than [`MAX_PIXELS`] (or a zero side).
    #[error("the image is too large to decode for a thumbnail")]
    TooLarge,
    /// The decoder refused the bytes.
    #[error("the image could not be decoded")]
    Corrupt,
    /// The JPEG encoder refused the thumbnail.
    #[error("the thumbnail could not be encoded")]
    Encode,
}

/// The thumbnail of `data`, or `None` (logged at debug) when it cannot be made.
pub fn make(data: &[u8]) -> Option<Thumbnail> {
    try_make(data)
        .inspect_err(|why| tracing::debug!(reason = %why, "sending the image without a thumbnail"))
        .ok()
}

/// At most one image is decoded at a time (see the module doc).
static ONE_AT_A_TIME: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(1)));

/// [`make`] on tokio's blocking pool, after the images queued before it. The turn is held by
/// the decode itself, so a send that gives up waiting does not let a second decode start beside
/// one still running.
pub async fn make_off_thread(data: Bytes) -> Option<Thumbnail> {
    let turn = ONE_AT_A_TIME.clone().acquire_owned().await.ok()?;
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        make(&data)
    })
    .await
    .unwrap_or_else(|_| {
        tracing::debug!("the thumbnail task failed; sending the image without one");
        None
    })
}

/// The thumbnail of `data`, or why there is none.
pub(crate) fn try_make(data: &[u8]) -> Result<Thumbnail, Skip> {
    let (width, height, rgb, size) = if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        jpeg(data)?
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(data)?
    } else {
        return Err(Skip::Format);
    };
    let mut jpeg = Vec::with_capacity(4096);
    let (w, h) = (
        u16::try_from(size.0).map_err(|_| Skip::Encode)?,
        u16::try_from(size.1).map_err(|_| Skip::Encode)?,
    );
    Encoder::new(&mut jpeg, QUALITY)
        .encode(&rgb, w, h, ColorType::Rgb)
        .map_err(|_| Skip::Encode)?;
    Ok(Thumbnail {
        jpeg,
        width,
        height,
    })
}

/// What a decoder produced: the image's width and height, and the RGB thumbnail with its size.
type Shrunk = (u32, u32, Vec<u8>, (u32, u32));

/// Refuse a header whose size is empty or above [`MAX_PIXELS`], before any pixel is decoded.
fn admit(width: u32, height: u32) -> Result<(), Skip> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 || pixels > MAX_PIXELS {
        return Err(Skip::TooLarge);
    }
    Ok(())
}

/// Decode a JPEG (zune-jpeg: baseline and progressive, grey, YCbCr, CMYK) and shrink it.
fn jpeg(data: &[u8]) -> Result<Shrunk, Skip> {
    // The decoder's own limit (16,384 per side) would refuse long panoramas that
    // `MAX_PIXELS` admits; the header's 16-bit sides are the only bound left to it.
    let options = DecoderOptions::default()
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX))
        .jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(data), options);
    decoder.decode_headers().map_err(|_| Skip::Corrupt)?;
    let (w, h) = decoder.dimensions().ok_or(Skip::Corrupt)?;
    let (w, h) = (
        u32::try_from(w).map_err(|_| Skip::TooLarge)?,
        u32::try_from(h).map_err(|_| Skip::TooLarge)?,
    );
    admit(w, h)?;
    let layout = match decoder.output_colorspace() {
        Some(ColorSpace::RGB) => Layout::Rgb,
        Some(ColorSpace::RGBA) => Layout::Rgba,
        Some(ColorSpace::Luma) => Layout::Luma,
        Some(ColorSpace::LumaA) => Layout::LumaA,
        _ => return Err(Skip::Corrupt),
    };
    let pixels = decoder.decode().map_err(|_| Skip::Corrupt)?;
    let to = target(w, h, LONGEST_SIDE);
    let mut shrink = Shrink::new(layout, (w, h), to);
    for row in pixels.chunks_exact(w as usize * layout.channels()) {
        shrink.push(row);
    }
    Ok((w, h, shrink.finish().ok_or(Skip::Corrupt)?, to))
}

/// Decode a PNG (any colour type and depth, normalised to 8 bits) and shrink it; rows of a
/// non-interlaced image are shrunk as they are decoded, never held whole.
fn png(data: &[u8]) -> Result<Shrunk, Skip> {
    // The pixel limit is ours; the decoder's byte limit only has to let it through.
    let limits = png::Limits {
        bytes: (MAX_PIXELS * 8) as usize,
    };
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(data), limits);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|_| Skip::Corrupt)?;
    let (w, h) = reader.info().size();
    admit(w, h)?;
    let layout = match reader.output_color_type().0 {
        png::ColorType::Grayscale => Layout::Luma,
        png::ColorType::GrayscaleAlpha => Layout::LumaA,
        png::ColorType::Rgb => Layout::Rgb,
        png::ColorType::Rgba => Layout::Rgba,
        png::ColorType::Indexed => return Err(Skip::Corrupt),
    };
    let to = target(w, h, LONGEST_SIDE);
    let mut shrink = Shrink::new(layout, (w, h), to);
    if reader.info().interlaced {
        // Adam7 passes arrive out of row order: the frame is decoded whole first.
        let size = reader.output_buffer_size().ok_or(Skip::TooLarge)?;
        let mut frame = vec![0; size];
        let info = reader.next_frame(&mut frame).map_err(|_| Skip::Corrupt)?;
        for row in frame.chunks_exact(info.line_size).take(h as usize) {
            shrink.push(row);
        }
    } else {
        while let Some(row) = reader.next_row().map_err(|_| Skip::Corrupt)? {
            shrink.push(row.data());
        }
    }
    Ok((w, h, shrink.finish().ok_or(Skip::Corrupt)?, to))
}
