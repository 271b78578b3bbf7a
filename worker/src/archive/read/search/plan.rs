//! How a search reads the word index: every match at once ([`Plan::Whole`]), or bucket by
//! bucket newest first at one of the key sizes of migration 0025 ([`Plan::Buckets`]). Chosen
//! per call from the planner's statistics ([`super::stats`]): the expected matches per second
//! of archive, the range of time asked, and the page size.
//!
//! The costs are in units of one index probe; a fetched match (its row read from the heap, at
//! a random place) costs a tenth of one. A probe of a bucket costs about the same whether it
//! holds 2 or 200 matches in the index; what grows with the bucket is the rows fetched. So the
//! best bucket holds about a page of matches: smaller, and the probes add up; larger, and
//! rows the page does not need are fetched.
//!
//! The statistics know each word's and each busy chat's share of the archive, not how they
//! fall together or over time (a Portuguese word is rare in an English chat, a word can belong
//! to one month): each plan is costed at [`SPREAD`] times fewer and more matches than
//! expected, and the plan whose worse case is cheapest wins.

/// The key sizes, as shifts of Unix time (migration 0025): ~68 minutes, ~36 hours, ~49 days.
pub(super) const SHIFTS: [u8; 3] = [12, 17, 22];

/// A fetched match, in probes.
const FETCH: f64 = 0.1;
/// How far off the expected rate of matches may be, either way.
const SPREAD: f64 = 4.0;

/// How a search reads the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every match of the words (and chat key), then the newest of them.
    Whole,
    /// One bucket of `2^shift` seconds at a time, newest first.
    Buckets(u8),
}

/// What the statistics say about one search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    /// Matches per second of archive time (the words' and chat's share of the messages times
    /// the archive's messages per second).
    pub(crate) rate: f64,
    /// Whether `rate` is only an upper bound (a word rarer than any the statistics track):
    /// then the plan must also suit a word of no match at all.
    pub(crate) at_most: bool,
    /// Seconds of the whole archive (a whole read fetches matches from all of it).
    pub(crate) span: f64,
    /// Seconds of the range asked (`since`/`until`, the scope's dates, the paging anchor).
    pub(crate) range: f64,
}

/// The cheapest plan for a page of `limit` under `e`.
pub(crate) fn choose(e: &Estimate, limit: u32) -> Plan {
    let cost = |plan: Plan, rate: f64| cost(plan, rate, e, f64::from(limit.max(1)));
    let worst = |plan: Plan| {
        let (low, high) = if e.at_most {
            (0.0, e.rate)
        } else {
            (e.rate / SPREAD, e.rate * SPREAD)
        };
        cost(plan, low).max(cost(plan, high))
    };
    let mut best = (Plan::Whole, worst(Plan::Whole));
    for shift in SHIFTS {
        let plan = Plan::Buckets(shift);
        let c = worst(plan);
        if c < best.1 {
            best = (plan, c);
        }
    }
    best.0
}

/// The expected cost of `plan` for a page of `limit` when matches come at `rate` a second.
fn cost(plan: Plan, rate: f64, e: &Estimate, limit: f64) -> f64 {
    match plan {
        Plan::Whole => 1.0 + FETCH * rate * e.span,
        Plan::Buckets(shift) => {
            let size = f64::from(1u32 << shift);
            let per_bucket = rate * size;
            let buckets = (e.range / size).ceil() + 1.0;
            let probes = buckets.min((limit / per_bucket.max(f64::MIN_POSITIVE)).ceil() + 1.0);
            let fetched = (rate * e.range).min(limit + per_bucket);
            probes + FETCH * fetched
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YEAR: f64 = 365.0 * 86_400.0;
    const DAY: f64 = 86_400.0;

    /// A word held by `share` of `messages` over two years, searched over `range`.
    fn estimate(messages: f64, share: f64, range: f64, at_most: bool) -> Estimate {
        Estimate {
            rate: messages * share / (2.0 * YEAR),
            at_most,
            span: 2.0 * YEAR,
            range,
        }
    }

    #[test]
    fn a_page_of_matches_per_bucket() {
        let at = |messages, share, range| choose(&estimate(messages, share, range, false), 20);
        // 5M messages: a word of 15% of them fills a page in an hour's bucket, one of 0.2%
        // (10,000 matches) in a day and a half's, one of 0.02% in a ~49 days'.
        assert_eq!(at(5e6, 0.15, 2.0 * YEAR), Plan::Buckets(12));
        assert_eq!(at(5e6, 0.002, 2.0 * YEAR), Plan::Buckets(17));
        assert_eq!(at(5e6, 0.0002, 2.0 * YEAR), Plan::Buckets(22));
        // A word of 20 matches: read them all, in a large archive or a small one.
        assert_eq!(at(5e6, 4e-6, 2.0 * YEAR), Plan::Whole);
        assert_eq!(at(1e4, 0.002, 2.0 * YEAR), Plan::Whole);
        // 200 matches: perhaps 800, too many to fetch for a page; the largest buckets.
        assert_eq!(at(1e4, 0.02, 2.0 * YEAR), Plan::Buckets(22));
    }

    #[test]
    fn a_short_range_takes_finer_buckets_than_the_whole_archive() {
        let at = |share, range| choose(&estimate(5e6, share, range, false), 20);
        assert_eq!(at(0.0002, 2.0 * YEAR), Plan::Buckets(22));
        assert_eq!(at(0.0002, DAY), Plan::Buckets(17));
    }

    #[test]
    fn an_untracked_word_also_suits_no_match_at_all() {
        // At most 0.2% of 5M: tracked, that is ~36-hour buckets; but a word of no match
        // would probe all ~480 of them, so the ~49-day buckets (15 probes) are chosen.
        assert_eq!(
            choose(&estimate(5e6, 0.002, 2.0 * YEAR, true), 20),
            Plan::Buckets(22)
        );
        // Within a day, the same upper bound: two ~36-hour buckets at most.
        assert_eq!(
            choose(&estimate(5e6, 0.002, DAY, true), 20),
            Plan::Buckets(17)
        );
    }
}
