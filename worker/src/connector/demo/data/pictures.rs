//! The demo's pictures and documents, drawn procedurally: each [`Pic`] is a few flat shapes on a
//! gradient, encoded as a real JPEG (a 320×240 photo and a 64×48 thumbnail) so previews and
//! attachment downloads work without shipping binary files. Also a tiny one-page PDF writer for
//! the demo documents.

use jpeg_encoder::{ColorType, Encoder};

/// Photo size (4:3) and thumbnail size (same aspect, as WhatsApp keeps it).
pub(crate) const PHOTO: (u16, u16) = (320, 240);
/// Thumbnail size.
pub(crate) const THUMB: (u16, u16) = (64, 48);

/// An RGB colour.
type Rgb = (u8, u8, u8);

/// One flat shape. `x`/`y` are fractions of width/height; ellipse radii are fractions of height
/// (so `rx == ry` is a circle).
#[derive(Clone, Copy)]
enum Shape {
    /// Axis-aligned rectangle `x0, y0, x1, y1`.
    R(f32, f32, f32, f32, Rgb),
    /// Ellipse `cx, cy, rx, ry`.
    E(f32, f32, f32, f32, Rgb),
    /// Triangle `x0, y0, x1, y1, x2, y2`.
    T(f32, f32, f32, f32, f32, f32, Rgb),
}
use Shape::{E, R, T};

/// A picture: a vertical gradient (top, bottom) and shapes painted in order.
struct Scene {
    top: Rgb,
    bottom: Rgb,
    shapes: &'static [Shape],
}

/// Every picture the demo uses (photos in chats and stories).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pic {
    Sunset,
    GiftBox,
    AppleCake,
    Beach,
    Flowers,
    Coffee,
    Hummus,
    Shelves,
    Stain,
    Whiteboard,
    Mountains,
    Pitch,
    Barbecue,
    Bowl,
    SeaView,
    Skyline,
    Mural,
}

impl Pic {
    /// All pictures, in index order.
    pub(crate) const ALL: [Pic; 17] = [
        Pic::Sunset,
        Pic::GiftBox,
        Pic::AppleCake,
        Pic::Beach,
        Pic::Flowers,
        Pic::Coffee,
        Pic::Hummus,
        Pic::Shelves,
        Pic::Stain,
        Pic::Whiteboard,
        Pic::Mountains,
        Pic::Pitch,
        Pic::Barbecue,
        Pic::Bowl,
        Pic::SeaView,
        Pic::Skyline,
        Pic::Mural,
    ];

    fn scene(self) -> Scene {
        const WHITE: Rgb = (250, 250, 248);
        let (top, bottom, shapes): (Rgb, Rgb, &'static [Shape]) = match self {
            Pic::Sunset => (
                (255, 150, 70),
                (95, 45, 125),
                &[
                    E(0.5, 0.62, 0.16, 0.16, (255, 225, 130)),
                    R(0.0, 0.72, 1.0, 1.0, (45, 28, 55)),
                    R(0.0, 0.80, 1.0, 0.83, (20, 15, 25)),
                    R(0.1, 0.83, 0.12, 1.0, (20, 15, 25)),
                    R(0.88, 0.83, 0.9, 1.0, (20, 15, 25)),
                ],
            ),
            Pic::GiftBox => (
                (238, 228, 212),
                (200, 188, 170),
                &[
                    R(0.22, 0.38, 0.66, 0.88, (186, 140, 92)),
                    R(0.42, 0.38, 0.47, 0.88, (226, 206, 160)),
                    R(0.70, 0.52, 0.84, 0.88, (240, 196, 40)),
                    R(0.72, 0.60, 0.82, 0.70, (40, 90, 200)),
                ],
            ),
            Pic::AppleCake => (
                (128, 86, 54),
                (88, 58, 34),
                &[
                    E(0.5, 0.55, 0.42, 0.40, WHITE),
                    E(0.5, 0.55, 0.32, 0.30, (204, 146, 72)),
                    E(0.42, 0.48, 0.06, 0.04, (236, 196, 110)),
                    E(0.58, 0.50, 0.06, 0.04, (236, 196, 110)),
                    E(0.50, 0.63, 0.06, 0.04, (236, 196, 110)),
                ],
            ),
            Pic::Beach => (
                (110, 185, 240),
                (205, 232, 250),
                &[
                    R(0.0, 0.48, 1.0, 0.68, (30, 118, 180)),
                    R(0.0, 0.68, 1.0, 1.0, (236, 214, 160)),
                    E(0.35, 0.72, 0.03, 0.08, (230, 90, 70)),
                    E(0.45, 0.74, 0.03, 0.07, (60, 160, 90)),
                    E(0.85, 0.14, 0.07, 0.07, (255, 244, 190)),
                ],
            ),
            Pic::Flowers => (
                (250, 240, 244),
                (226, 214, 226),
                &[
                    R(0.44, 0.62, 0.56, 0.95, (120, 170, 200)),
                    R(0.49, 0.30, 0.51, 0.62, (70, 140, 60)),
                    E(0.40, 0.30, 0.09, 0.09, (236, 80, 120)),
                    E(0.60, 0.28, 0.09, 0.09, (250, 200, 40)),
                    E(0.50, 0.20, 0.09, 0.09, (220, 40, 60)),
                ],
            ),
            Pic::Coffee => (
                (150, 110, 80),
                (110, 78, 52),
                &[
                    E(0.5, 0.55, 0.36, 0.36, (240, 238, 232)),
                    E(0.5, 0.55, 0.24, 0.24, WHITE),
                    E(0.5, 0.55, 0.19, 0.19, (120, 72, 40)),
                    E(0.5, 0.55, 0.07, 0.05, (214, 176, 130)),
                    R(0.72, 0.50, 0.80, 0.58, WHITE),
                ],
            ),
            Pic::Hummus => (
                (60, 90, 120),
                (36, 60, 84),
                &[
                    E(0.5, 0.52, 0.44, 0.42, (236, 232, 222)),
                    E(0.5, 0.52, 0.32, 0.30, (222, 196, 150)),
                    E(0.5, 0.52, 0.10, 0.08, (200, 170, 50)),
                    E(0.40, 0.45, 0.02, 0.02, (190, 40, 30)),
                    E(0.60, 0.58, 0.02, 0.02, (190, 40, 30)),
                    R(0.82, 0.25, 0.98, 0.75, (222, 180, 110)),
                ],
            ),
            Pic::Shelves => (
                (228, 226, 220),
                (208, 206, 198),
                &[
                    R(0.15, 0.35, 0.85, 0.38, (120, 80, 45)),
                    R(0.15, 0.68, 0.85, 0.71, (120, 80, 45)),
                    R(0.20, 0.17, 0.25, 0.35, (200, 50, 50)),
                    R(0.25, 0.20, 0.30, 0.35, (40, 80, 170)),
                    R(0.30, 0.15, 0.34, 0.35, (230, 180, 40)),
                    E(0.70, 0.28, 0.08, 0.08, (60, 140, 70)),
                    R(0.66, 0.30, 0.74, 0.35, (170, 90, 60)),
                    R(0.40, 0.52, 0.60, 0.68, (90, 90, 100)),
                ],
            ),
            Pic::Stain => (
                (226, 226, 220),
                (204, 204, 198),
                &[
                    E(0.55, 0.35, 0.22, 0.14, (176, 164, 128)),
                    E(0.62, 0.42, 0.14, 0.10, (150, 138, 100)),
                    E(0.48, 0.30, 0.08, 0.06, (160, 148, 110)),
                    E(0.25, 0.75, 0.06, 0.06, (250, 250, 235)),
                ],
            ),
            Pic::Whiteboard => (
                WHITE,
                (232, 232, 230),
                &[
                    R(0.08, 0.15, 0.30, 0.35, (60, 110, 200)),
                    R(0.40, 0.15, 0.62, 0.35, (60, 170, 100)),
                    R(0.72, 0.15, 0.94, 0.35, (60, 170, 100)),
                    R(0.30, 0.24, 0.40, 0.26, (40, 40, 40)),
                    R(0.62, 0.24, 0.72, 0.26, (40, 40, 40)),
                    R(0.50, 0.35, 0.52, 0.60, (40, 40, 40)),
                    E(0.51, 0.72, 0.18, 0.12, (210, 70, 60)),
                ],
            ),
            Pic::Mountains => (
                (90, 150, 225),
                (200, 225, 245),
                &[
                    T(0.0, 0.9, 0.35, 0.25, 0.7, 0.9, (90, 96, 110)),
                    T(0.4, 0.9, 0.72, 0.35, 1.0, 0.9, (110, 116, 130)),
                    T(0.28, 0.37, 0.35, 0.25, 0.42, 0.37, WHITE),
                    T(0.66, 0.45, 0.72, 0.35, 0.78, 0.45, WHITE),
                    R(0.0, 0.88, 1.0, 1.0, (70, 130, 60)),
                ],
            ),
            Pic::Pitch => (
                (70, 150, 70),
                (50, 120, 50),
                &[
                    R(0.0, 0.0, 0.2, 1.0, (80, 165, 80)),
                    R(0.4, 0.0, 0.6, 1.0, (80, 165, 80)),
                    R(0.8, 0.0, 1.0, 1.0, (80, 165, 80)),
                    R(0.495, 0.0, 0.505, 1.0, WHITE),
                    E(0.5, 0.5, 0.2, 0.2, WHITE),
                    E(0.5, 0.5, 0.185, 0.185, (76, 158, 76)),
                    E(0.62, 0.7, 0.05, 0.05, WHITE),
                    E(0.62, 0.7, 0.02, 0.02, (30, 30, 30)),
                ],
            ),
            Pic::Barbecue => (
                (40, 36, 34),
                (20, 18, 18),
                &[
                    R(0.1, 0.3, 0.9, 0.85, (60, 60, 62)),
                    E(0.3, 0.8, 0.1, 0.06, (250, 130, 30)),
                    E(0.6, 0.82, 0.12, 0.06, (240, 90, 20)),
                    R(0.18, 0.40, 0.40, 0.52, (150, 60, 40)),
                    R(0.48, 0.38, 0.70, 0.50, (170, 80, 50)),
                    R(0.30, 0.58, 0.55, 0.68, (140, 55, 35)),
                    R(0.62, 0.58, 0.80, 0.66, (200, 160, 80)),
                ],
            ),
            Pic::Bowl => (
                (210, 190, 170),
                (180, 160, 140),
                &[
                    E(0.5, 0.62, 0.34, 0.20, (90, 120, 140)),
                    E(0.5, 0.50, 0.34, 0.10, (200, 210, 205)),
                    E(0.52, 0.50, 0.28, 0.07, (150, 170, 175)),
                ],
            ),
            Pic::SeaView => (
                (120, 195, 245),
                (190, 225, 250),
                &[
                    R(0.0, 0.45, 1.0, 0.75, (20, 130, 170)),
                    R(0.0, 0.75, 1.0, 1.0, (238, 220, 170)),
                    R(0.0, 0.80, 1.0, 0.82, WHITE),
                    R(0.1, 0.82, 0.115, 1.0, WHITE),
                    R(0.5, 0.82, 0.515, 1.0, WHITE),
                    R(0.9, 0.82, 0.915, 1.0, WHITE),
                    E(0.15, 0.15, 0.06, 0.06, (255, 240, 180)),
                ],
            ),
            Pic::Skyline => (
                (250, 170, 90),
                (120, 70, 150),
                &[
                    R(0.05, 0.45, 0.18, 1.0, (40, 40, 70)),
                    R(0.20, 0.30, 0.30, 1.0, (50, 50, 85)),
                    R(0.33, 0.55, 0.45, 1.0, (35, 35, 60)),
                    R(0.48, 0.20, 0.56, 1.0, (55, 55, 90)),
                    R(0.60, 0.40, 0.75, 1.0, (40, 40, 72)),
                    R(0.78, 0.50, 0.95, 1.0, (50, 48, 80)),
                ],
            ),
            Pic::Mural => (
                (240, 236, 226),
                (220, 214, 204),
                &[
                    R(0.05, 0.10, 0.35, 0.60, (230, 60, 80)),
                    R(0.30, 0.40, 0.70, 0.90, (40, 170, 200)),
                    E(0.75, 0.35, 0.22, 0.22, (250, 200, 30)),
                    T(0.55, 0.10, 0.95, 0.10, 0.75, 0.55, (120, 60, 170)),
                ],
            ),
        };
        Scene {
            top,
            bottom,
            shapes,
        }
    }

    /// The picture as RGB pixels, `w × h`.
    fn pixels(self, w: u16, h: u16) -> Vec<u8> {
        let scene = self.scene();
        let (wf, hf) = (f32::from(w), f32::from(h));
        let mut out = Vec::with_capacity(usize::from(w) * usize::from(h) * 3);
        for py in 0..h {
            let y = (f32::from(py) + 0.5) / hf;
            for px in 0..w {
                let x = (f32::from(px) + 0.5) / wf;
                let mut c = lerp(scene.top, scene.bottom, y);
                for s in scene.shapes {
                    if s.contains(x, y, wf / hf) {
                        c = s.colour();
                    }
                }
                // A soft vignette so the flat shapes look a little less synthetic.
                let d = (x - 0.5).powi(2) + (y - 0.5).powi(2);
                let k = 1.0 - 0.35 * d;
                out.extend([c.0, c.1, c.2].map(|v| (f32::from(v) * k) as u8));
            }
        }
        out
    }

    /// The picture encoded as a JPEG of `size` at `quality`.
    pub(crate) fn jpeg(self, size: (u16, u16), quality: u8) -> Vec<u8> {
        let mut buf = Vec::new();
        Encoder::new(&mut buf, quality)
            .encode(&self.pixels(size.0, size.1), size.0, size.1, ColorType::Rgb)
            .expect("encoding an in-memory RGB buffer of the declared size cannot fail");
        buf
    }
}

impl Shape {
    fn colour(self) -> Rgb {
        match self {
            R(.., c) | E(.., c) | T(.., c) => c,
        }
    }

    /// Whether the point (`x`, `y`, fractions) is inside; `aspect` = width / height.
    fn contains(self, x: f32, y: f32, aspect: f32) -> bool {
        match self {
            R(x0, y0, x1, y1, _) => x >= x0 && x < x1 && y >= y0 && y < y1,
            E(cx, cy, rx, ry, _) => {
                let dx = (x - cx) * aspect / rx;
                let dy = (y - cy) / ry;
                dx * dx + dy * dy <= 1.0
            }
            T(x0, y0, x1, y1, x2, y2, _) => {
                let side = |ax: f32, ay: f32, bx: f32, by: f32| {
                    (bx - ax) * (y - ay) - (by - ay) * (x - ax)
                };
                let (a, b, c) = (
                    side(x0, y0, x1, y1),
                    side(x1, y1, x2, y2),
                    side(x2, y2, x0, y0),
                );
                (a >= 0.0 && b >= 0.0 && c >= 0.0) || (a <= 0.0 && b <= 0.0 && c <= 0.0)
            }
        }
    }
}

fn lerp(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let m = |p: u8, q: u8| (f32::from(p) + (f32::from(q) - f32::from(p)) * t) as u8;
    (m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// A valid one-page PDF showing `lines` (ASCII) in Helvetica, with a correct cross-reference table.
pub(crate) fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut content = String::from("BT /F1 14 Tf 72 760 Td 18 TL");
    for l in lines {
        let esc: String = l
            .chars()
            .filter(char::is_ascii)
            .flat_map(|c| match c {
                '(' | ')' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        content.push_str(&format!(" ({esc}) Tj T*"));
    }
    content.push_str(" ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{body}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!(
        "xref\n0 {}\n0000000000 65535 f \n",
        objects.len() + 1
    ));
    for o in offsets {
        out.push_str(&format!("{o:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out.into_bytes()
}
