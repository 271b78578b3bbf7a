//! The phone shape's text (`--shape phone`, see [`crate::phone`]): messages in English,
//! Portuguese and Hebrew drawn from one vocabulary per language with a Zipf frequency (real
//! everyday words first, then made-up words, so every frequency decade has words), with emoji,
//! links, numbers and a few one-off words (codes, typos, names: a real archive's lexicon is
//! mostly words that occur once). Every message's distinct words are counted as they are made,
//! so the bench can pick its search words from the archive it made, one per frequency decade.

use crate::dataset::Rng;

/// Words in each language's vocabulary (past the real words, made-up ones).
const VOCAB: usize = 400_000;

/// A message's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    En,
    Pt,
    He,
}

impl Lang {
    fn index(self) -> usize {
        self as usize
    }
    /// 40% English, 30% Portuguese, 30% Hebrew.
    pub(crate) fn draw(rng: &mut Rng) -> Self {
        match rng.below(10) {
            0..4 => Self::En,
            4..7 => Self::Pt,
            _ => Self::He,
        }
    }
}

/// Everyday words, most frequent first (each already as the index folds it).
#[rustfmt::skip]
const EN: &[&str] = &[
    "i", "you", "the", "to", "ok", "and", "a", "is", "it", "yes", "no", "what", "we", "on", "for",
    "in", "me", "my", "be", "can", "this", "that", "so", "are", "how", "just", "call", "now",
    "going", "home", "love", "good", "see", "later", "time", "today", "tomorrow", "thanks",
    "meeting", "dinner", "work", "coffee", "weekend", "send", "photo", "kids", "school", "when",
    "where", "train", "project", "deadline", "birthday", "doctor", "budget", "invoice",
];
/// Portuguese everyday words: as written, and as the index folds them.
#[rustfmt::skip]
const PT: &[(&str, &str)] = &[
    ("não", "nao"), ("que", "que"), ("sim", "sim"), ("eu", "eu"), ("você", "voce"), ("de", "de"),
    ("a", "a"), ("o", "o"), ("é", "e"), ("tá", "ta"), ("vou", "vou"), ("bom", "bom"),
    ("dia", "dia"), ("obrigado", "obrigado"), ("kkkk", "kkkk"), ("amanhã", "amanha"),
    ("hoje", "hoje"), ("agora", "agora"), ("casa", "casa"), ("beijo", "beijo"), ("tudo", "tudo"),
    ("bem", "bem"), ("gente", "gente"), ("depois", "depois"), ("quando", "quando"),
    ("onde", "onde"), ("reunião", "reuniao"), ("jantar", "jantar"), ("trabalho", "trabalho"),
    ("saudade", "saudade"), ("praia", "praia"), ("futebol", "futebol"), ("foto", "foto"),
    ("filhos", "filhos"), ("escola", "escola"), ("orçamento", "orcamento"), ("preço", "preco"),
    ("aniversário", "aniversario"), ("médico", "medico"), ("fatura", "fatura"),
];
/// Hebrew everyday words (no points, so the index keeps them as written).
#[rustfmt::skip]
const HE: &[&str] = &[
    "אני", "לא", "מה", "זה", "כן", "את", "של", "על", "יש", "אתה", "טוב", "תודה", "מחר", "היום",
    "בבית", "אוכל", "עבודה", "שלום", "בוקר", "ערב", "אמא", "אבא", "ילדים", "משפחה", "ארוחה", "חג",
    "שבת", "כמה", "איפה", "מתי", "עכשיו", "רגע", "בסדר", "סבבה", "יאללה", "פגישה", "יומולדת",
    "רופא", "תקציב", "חשבונית",
];
/// Emoji, most frequent first.
#[rustfmt::skip]
const EMOJI: &[&str] = &[
    "😂", "❤️", "👍", "🙏", "😊", "🎉", "😍", "🔥", "😅", "🥰", "😭", "👏",
];
/// Link hosts, most frequent first.
const HOSTS: &[&str] = &[
    "www.youtube.com/watch?v=",
    "maps.app.goo.gl/",
    "www.instagram.com/p/",
    "open.spotify.com/track/",
    "docs.google.com/document/d/",
    "www.ynet.co.il/news/article/",
    "g1.globo.com/",
    "www.bbc.co.uk/news/",
];
/// Letters of the made-up words: consonants and vowels per Latin language (disjoint consonants,
/// so an English and a Portuguese made-up word never fold to the same lexeme), Hebrew letters.
const EN_CONSONANTS: &[u8] = b"bdfgkhjwz";
const PT_CONSONANTS: &[u8] = b"lmnprstv";
const VOWELS: &[u8] = b"aeiou";
const HE_LETTERS: &[char] = &[
    'א', 'ב', 'ג', 'ד', 'ה', 'ו', 'ז', 'ח', 'ט', 'י', 'כ', 'ל', 'מ', 'נ', 'ס', 'ע', 'פ', 'צ', 'ק',
    'ר', 'ש', 'ת',
];

/// A rank-`s` Zipf draw over `0..n` (continuous inversion: no table, any `n`).
pub(crate) fn zipf(rng: &mut Rng, n: usize, s: f64) -> usize {
    let u = rng.unit();
    let top = (n as f64 + 1.0).ln();
    let x = if (s - 1.0).abs() < 1e-9 {
        (u * top).exp()
    } else {
        let a = 1.0 - s;
        ((u * ((n as f64 + 1.0).powf(a) - 1.0)) + 1.0).powf(1.0 / a)
    };
    (x as usize).clamp(1, n) - 1
}

/// `v` (≥ 1) in bijective base `k`: digits, least significant first.
fn bijective(mut v: u64, k: u64) -> Vec<u64> {
    let mut digits = Vec::new();
    while v > 0 {
        v -= 1;
        digits.push(v % k);
        v /= k;
    }
    digits
}

/// The word of rank `rank` in `lang`: `(as written, as the index folds it)`.
pub(crate) fn word(lang: Lang, rank: usize) -> (String, String) {
    let real = match lang {
        Lang::En => EN.get(rank).map(|w| (*w, *w)),
        Lang::Pt => PT.get(rank).copied(),
        Lang::He => HE.get(rank).copied().map(|w| (w, w)),
    };
    if let Some((written, folded)) = real {
        return (written.to_owned(), folded.to_owned());
    }
    let n = (rank - real_len(lang)) as u64;
    let w = match lang {
        Lang::En | Lang::Pt => {
            let consonants = if lang == Lang::En {
                EN_CONSONANTS
            } else {
                PT_CONSONANTS
            };
            let k = (consonants.len() * VOWELS.len()) as u64;
            // Three syllables at least, so no made-up word is a short real one.
            bijective(n + 1 + k + k * k, k)
                .iter()
                .enumerate()
                // Shifted by position (still one word per rank), so the words vary.
                .flat_map(|(at, d)| {
                    let d = (*d as usize + 17 * at) % k as usize;
                    [
                        consonants[d / VOWELS.len()] as char,
                        VOWELS[d % VOWELS.len()] as char,
                    ]
                })
                .collect()
        }
        Lang::He => {
            let k = HE_LETTERS.len() as u64;
            // Five letters at least.
            bijective(n + 1 + k + k.pow(2) + k.pow(3) + k.pow(4), k)
                .iter()
                .enumerate()
                .map(|(at, d)| HE_LETTERS[(*d as usize + 7 * at) % HE_LETTERS.len()])
                .collect::<String>()
        }
    };
    (w.clone(), w)
}

fn real_len(lang: Lang) -> usize {
    match lang {
        Lang::En => EN.len(),
        Lang::Pt => PT.len(),
        Lang::He => HE.len(),
    }
}

/// The text generator, and how many messages hold each word.
pub(crate) struct Words {
    /// Per language, messages holding the word of each rank.
    counts: [Vec<u32>; 3],
    /// A word that occurs once, in a message past the archive's middle.
    once: Option<String>,
    /// This message's distinct words, reused.
    seen: Vec<usize>,
}

/// A search word the bench picked from the archive it made.
#[derive(Debug, Clone)]
pub(crate) struct Pick {
    /// The frequency decade it stands for (1, 10, 100, …).
    pub(crate) decade: u64,
    /// As an agent would type it.
    pub(crate) written: String,
    /// As the index folds it.
    pub(crate) folded: String,
    /// Messages holding it, as counted while generating.
    pub(crate) count: u64,
    lang: Option<Lang>,
}

impl Words {
    pub(crate) fn new() -> Self {
        Self {
            counts: [vec![0; VOCAB], vec![0; VOCAB], vec![0; VOCAB]],
            once: None,
            seen: Vec::new(),
        }
    }

    /// A message's text in `lang`: `short` for a caption. `i` of `total` makes one-off words
    /// unique.
    pub(crate) fn text(
        &mut self,
        rng: &mut Rng,
        lang: Lang,
        short: bool,
        i: usize,
        total: usize,
    ) -> String {
        let n = match (short, rng.below(100)) {
            (true, _) => 1 + rng.below(6),
            (false, 0..35) => 1 + rng.below(3),
            (false, 35..85) => 4 + rng.below(12),
            _ => 16 + rng.below(45),
        };
        self.seen.clear();
        let mut out = String::new();
        for k in 0..n {
            if k > 0 {
                out.push_str(if rng.below(12) == 0 { ", " } else { " " });
            }
            if rng.below(100) < 5 {
                out.push_str(EMOJI[zipf(rng, EMOJI.len(), 1.2)]);
                continue;
            }
            let rank = zipf(rng, VOCAB, 1.0);
            self.seen.push(rank);
            out.push_str(&word(lang, rank).0);
        }
        self.seen.sort_unstable();
        self.seen.dedup();
        for rank in &self.seen {
            let c = &mut self.counts[lang.index()][*rank];
            *c = c.saturating_add(1);
        }
        match rng.below(100) {
            0..3 => {
                let id: String = (0..11)
                    .map(|_| {
                        b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
                            [rng.below(58)] as char
                    })
                    .collect();
                out.push_str(&format!(
                    " https://{}{id}",
                    HOSTS[zipf(rng, HOSTS.len(), 1.0)]
                ));
            }
            3..11 => out.push_str(&match (rng.below(4), lang) {
                (0, Lang::En) => format!(" ${}", 5 + rng.below(2_000)),
                (0, Lang::Pt) => format!(" R$ {},00", 5 + rng.below(2_000)),
                (0, Lang::He) => format!(" {} ₪", 5 + rng.below(2_000)),
                (1, _) => format!(" {}:{:02}", 7 + rng.below(16), 5 * rng.below(12)),
                (2, _) => format!(" {}/{}", 1 + rng.below(28), 1 + rng.below(12)),
                _ => format!(" 05{:08}", rng.below(100_000_000)),
            }),
            _ => {}
        }
        // One message in 200 holds a word of its own (a code, a typo, a name): 'q' and 'x' are
        // in no made-up word, so it is unique.
        if rng.below(200) == 0 {
            let once = format!("qx{i:x}");
            out.push(' ');
            out.push_str(&once);
            if self.once.is_none() && i >= total / 2 {
                self.once = Some(once);
            }
        }
        if rng.below(4) == 0 {
            out.push_str(["?", "!", ".", "!!", "..."][rng.below(5)]);
        }
        out
    }

    /// A document's file name.
    pub(crate) fn filename(rng: &mut Rng, lang: Lang, i: usize) -> String {
        let (w, _) = word(lang, zipf(rng, 2_000, 1.0));
        let ext = ["pdf", "docx", "xlsx", "pdf", "pptx", "zip"][rng.below(6)];
        format!("{w}_{}.{ext}", 2024 + i % 3)
    }

    /// One word per frequency decade from 1 to 100,000 messages (the word whose count is
    /// nearest in ratio, within 3×), as counted while generating.
    pub(crate) fn picks(&self) -> Vec<Pick> {
        let mut picks = Vec::new();
        for decade in [1u64, 10, 100, 1_000, 10_000, 100_000] {
            if decade == 1
                && let Some(once) = &self.once
            {
                picks.push(Pick {
                    decade,
                    written: once.clone(),
                    folded: once.clone(),
                    count: 1,
                    lang: None,
                });
                continue;
            }
            // The nearest word of each language; the decade's turn of language when it is
            // within 1.5× (so the words come in all three), else the nearest of all.
            let mut nearest: [Option<(f64, Lang, usize, u64)>; 3] = [None; 3];
            for lang in [Lang::En, Lang::Pt, Lang::He] {
                let best = &mut nearest[lang.index()];
                for (rank, c) in self.counts[lang.index()].iter().enumerate() {
                    if *c == 0 {
                        continue;
                    }
                    let c = if rank < real_len(lang) {
                        self.count(lang, rank)
                    } else {
                        u64::from(*c)
                    };
                    let off = (c as f64 / decade as f64).ln().abs();
                    if best.is_none_or(|b| off < b.0) {
                        *best = Some((off, lang, rank, c));
                    }
                }
            }
            let turn = nearest[decade.ilog10() as usize % 3];
            let best = match turn {
                Some(t) if t.0 <= 1.5f64.ln() => Some(t),
                _ => nearest
                    .into_iter()
                    .flatten()
                    .min_by(|a, b| a.0.total_cmp(&b.0)),
            };
            if let Some((off, lang, rank, count)) = best
                && off <= 3f64.ln()
            {
                let (written, folded) = word(lang, rank);
                picks.push(Pick {
                    decade,
                    written,
                    folded,
                    count,
                    lang: Some(lang),
                });
            }
        }
        picks
    }

    /// Messages holding the word of `rank` in `lang`, with the same word of the other languages
    /// (a few short real words are shared: `a`, `o`…).
    fn count(&self, lang: Lang, rank: usize) -> u64 {
        let (_, folded) = word(lang, rank);
        let mut c = u64::from(self.counts[lang.index()][rank]);
        if rank < real_len(lang) {
            for other in [Lang::En, Lang::Pt, Lang::He] {
                if other == lang {
                    continue;
                }
                for r in 0..real_len(other) {
                    if word(other, r).1 == folded {
                        c += u64::from(self.counts[other.index()][r]);
                    }
                }
            }
        }
        c
    }

    /// A two-word query: `pick` and its language's most frequent word.
    pub(crate) fn pair(pick: &Pick) -> Option<(String, String)> {
        let lang = pick.lang?;
        let (w, f) = (0..real_len(lang))
            .map(|r| word(lang, r))
            .find(|(_, f)| *f != pick.folded)?;
        Some((
            format!("{} {w}", pick.written),
            format!("'{}' & '{f}'", pick.folded),
        ))
    }
}
