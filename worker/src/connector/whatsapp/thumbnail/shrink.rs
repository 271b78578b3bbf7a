//! An area (box) filter fed one source row at a time: each thumbnail pixel is the mean of the
//! source pixels it covers. Rows are consumed as they come, so a decoder that streams rows (PNG)
//! never holds the full image; memory is one thumbnail row of sums plus the thumbnail.

/// The pixel layouts decoders hand over (8 bits per sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// Grey.
    Luma,
    /// Grey and alpha.
    LumaA,
    /// Red, green, blue.
    Rgb,
    /// Red, green, blue, alpha.
    Rgba,
}

impl Layout {
    /// Samples per pixel.
    pub(super) fn channels(self) -> usize {
        match self {
            Self::Luma => 1,
            Self::LumaA => 2,
            Self::Rgb => 3,
            Self::Rgba => 4,
        }
    }

    /// One pixel as RGB; transparency is laid over white, as a chat bubble shows it.
    fn rgb(self, p: &[u8]) -> [u32; 3] {
        let over_white =
            |v: u8, a: u8| (u32::from(v) * u32::from(a) + 255 * (255 - u32::from(a))) / 255;
        match self {
            Self::Luma => [u32::from(p[0]); 3],
            Self::LumaA => [over_white(p[0], p[1]); 3],
            Self::Rgb => [u32::from(p[0]), u32::from(p[1]), u32::from(p[2])],
            Self::Rgba => [
                over_white(p[0], p[3]),
                over_white(p[1], p[3]),
                over_white(p[2], p[3]),
            ],
        }
    }
}

/// The thumbnail size for a `width` × `height` image: the longer side at most `longest`, the
/// aspect ratio kept (rounded, never below 1 pixel), never larger than the image.
pub(super) fn target(width: u32, height: u32, longest: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= longest {
        return (width, height);
    }
    let scale = |side: u32| {
        let scaled = (u64::from(side) * u64::from(longest) + u64::from(long) / 2) / u64::from(long);
        u32::try_from(scaled).unwrap_or(longest).clamp(1, longest)
    };
    (scale(width), scale(height))
}

/// The filter's state: the sums of the thumbnail row being filled, and the finished rows.
pub(super) struct Shrink {
    layout: Layout,
    src_width: usize,
    src_height: usize,
    width: usize,
    height: usize,
    /// The thumbnail column of each source column.
    column: Vec<u32>,
    /// How many source columns each thumbnail column covers.
    per_column: Vec<u64>,
    /// RGB sums of the current thumbnail row.
    sums: Vec<u64>,
    /// Source rows summed into the current thumbnail row.
    rows: u64,
    /// Source rows consumed so far.
    seen: usize,
    /// Finished RGB thumbnail rows.
    out: Vec<u8>,
}

impl Shrink {
    /// A filter from a `src` image (width, height) in `layout` down to `to` (width, height),
    /// each no larger than the source's and at least 1.
    pub(super) fn new(layout: Layout, src: (u32, u32), to: (u32, u32)) -> Self {
        let (src_width, src_height) = (src.0 as usize, src.1 as usize);
        let (width, height) = (to.0 as usize, to.1 as usize);
        debug_assert!(width >= 1 && width <= src_width && height >= 1 && height <= src_height);
        // Source column x lands in thumbnail column ⌊x·w/W⌋; as w ≤ W every column gets one.
        let column: Vec<u32> = (0..src_width)
            .map(|x| (x as u64 * width as u64 / src_width as u64) as u32)
            .collect();
        let mut per_column = vec![0u64; width];
        for &c in &column {
            per_column[c as usize] += 1;
        }
        Self {
            layout,
            src_width,
            src_height,
            width,
            height,
            column,
            per_column,
            sums: vec![0; width * 3],
            rows: 0,
            seen: 0,
            out: Vec::with_capacity(width * height * 3),
        }
    }

    /// The thumbnail row source row `y` belongs to (⌊y·h/H⌋, as for columns).
    fn row_of(&self, y: usize) -> usize {
        (y as u64 * self.height as u64 / self.src_height as u64) as usize
    }

    /// Add the next source row (its first `width × channels` bytes are read); rows past the
    /// image's height are ignored.
    pub(super) fn push(&mut self, row: &[u8]) {
        if self.seen >= self.src_height {
            return;
        }
        let n = self.layout.channels();
        for (x, p) in row.chunks_exact(n).take(self.src_width).enumerate() {
            let c = self.column[x] as usize * 3;
            for (sum, v) in self.sums[c..c + 3].iter_mut().zip(self.layout.rgb(p)) {
                *sum += u64::from(v);
            }
        }
        self.rows += 1;
        self.seen += 1;
        let next = self.seen;
        if next == self.src_height || self.row_of(next) != self.row_of(next - 1) {
            self.flush();
        }
    }

    /// Close the current thumbnail row: its means, rounded.
    fn flush(&mut self) {
        for (x, &cols) in self.per_column.iter().enumerate() {
            let n = cols * self.rows;
            for s in &mut self.sums[x * 3..x * 3 + 3] {
                self.out.push(((*s + n / 2) / n) as u8);
                *s = 0;
            }
        }
        self.rows = 0;
    }

    /// The RGB thumbnail, once every source row was pushed.
    pub(super) fn finish(self) -> Option<Vec<u8>> {
        (self.out.len() == self.width * self.height * 3).then_some(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_keep_the_aspect_and_never_upscale() {
        assert_eq!(target(4000, 3000, 100), (100, 75));
        assert_eq!(target(3000, 4000, 100), (75, 100));
        assert_eq!(target(100_000, 10, 100), (100, 1));
        assert_eq!(target(64, 48, 100), (64, 48));
        assert_eq!(target(101, 1, 100), (100, 1));
    }

    #[test]
    fn each_thumbnail_pixel_is_the_mean_of_its_box() {
        // 4×2 grey → 2×1: boxes (10, 20, 30, 40) and (50, 60, 70, 80).
        let mut s = Shrink::new(Layout::Luma, (4, 2), (2, 1));
        s.push(&[10, 20, 50, 60]);
        s.push(&[30, 40, 70, 80]);
        assert_eq!(s.finish().unwrap(), vec![25, 25, 25, 65, 65, 65]);
        // Opaque and transparent red over white: (255, 0, 0) and (255, 255, 255) average.
        let mut s = Shrink::new(Layout::Rgba, (2, 1), (1, 1));
        s.push(&[255, 0, 0, 255, 255, 0, 0, 0]);
        assert_eq!(s.finish().unwrap(), vec![255, 128, 128]);
    }

    #[test]
    fn a_short_image_has_no_thumbnail() {
        let mut s = Shrink::new(Layout::Rgb, (2, 2), (1, 1));
        s.push(&[0; 6]);
        assert_eq!(s.finish(), None);
    }
}
