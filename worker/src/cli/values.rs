//! Parsing the values the command line takes: durations (`30d`, `12h`, `90m`), dates
//! (`YYYY-MM-DD` or RFC 3339) and comma-separated chat id lists. Errors say what was expected.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use wazap_shared::ids::is_chat_id;

/// The longest duration accepted: ten years.
const MAX_DAYS: i64 = 3650;

/// Which end of a day a bare date stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayBound {
    /// The start of the day, 00:00 UTC (for `--since`).
    Start,
    /// The end of the day: the next day's 00:00 UTC, exclusive (for `--until`).
    End,
}

/// A positive duration written as a whole number of days, hours or minutes: `30d`, `12h`, `90m`.
pub fn parse_duration(s: &str) -> Result<TimeDelta, String> {
    const EXPECTED: &str = "expected a duration like 30d, 12h or 90m";
    let s = s.trim();
    let unit = s.chars().last().ok_or(EXPECTED)?;
    let n: i64 = s[..s.len() - unit.len_utf8()]
        .parse()
        .map_err(|_| EXPECTED.to_owned())?;
    if n <= 0 {
        return Err(EXPECTED.into());
    }
    let minutes = match unit {
        'd' => n.checked_mul(24 * 60),
        'h' => n.checked_mul(60),
        'm' => Some(n),
        _ => return Err(EXPECTED.into()),
    }
    .filter(|m| *m <= MAX_DAYS * 24 * 60)
    .ok_or("at most 3650 days")?;
    Ok(TimeDelta::minutes(minutes))
}

/// A date `YYYY-MM-DD` (UTC; `bound` picks the start or the exclusive end of that day) or an
/// RFC 3339 instant, taken as given.
pub fn parse_date(s: &str, bound: DayBound) -> Result<DateTime<Utc>, String> {
    const EXPECTED: &str = "expected a date YYYY-MM-DD or an RFC 3339 time";
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| EXPECTED.to_owned())?;
    let day = match bound {
        DayBound::Start => day,
        DayBound::End => day.succ_opt().ok_or(EXPECTED)?,
    };
    Ok(day.and_time(chrono::NaiveTime::MIN).and_utc())
}

/// A comma-separated list of opaque chat ids (`c_…`), at least one.
pub fn parse_chat_list(s: &str) -> Result<Vec<String>, String> {
    const EXPECTED: &str = "expected opaque chat ids (c_…), comma-separated";
    let chats: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect();
    if chats.is_empty() || !chats.iter().all(|c| is_chat_id(c)) {
        return Err(EXPECTED.into());
    }
    Ok(chats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d").unwrap(), TimeDelta::days(30));
        assert_eq!(parse_duration("12h").unwrap(), TimeDelta::hours(12));
        assert_eq!(parse_duration("90m").unwrap(), TimeDelta::minutes(90));
        assert_eq!(parse_duration("3650d").unwrap(), TimeDelta::days(3650));
        for bad in [
            "",
            "d",
            "30",
            "0d",
            "-1d",
            "1.5h",
            "30s",
            "3651d",
            "99999999999999d",
            "1 d",
            "1é",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dates() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            parse_date("2026-03-01", DayBound::Start).unwrap(),
            t("2026-03-01T00:00:00Z")
        );
        assert_eq!(
            parse_date("2026-02-28", DayBound::End).unwrap(),
            t("2026-03-01T00:00:00Z")
        );
        assert_eq!(
            parse_date("2026-12-31", DayBound::End).unwrap(),
            t("2027-01-01T00:00:00Z")
        );
        assert_eq!(
            parse_date("2026-03-01T10:00:00+02:00", DayBound::End).unwrap(),
            t("2026-03-01T08:00:00Z")
        );
        for bad in ["", "2026-02-30", "01/02/2026", "2026-3-1x", "yesterday"] {
            assert!(parse_date(bad, DayBound::Start).is_err(), "{bad}");
        }
    }

    #[test]
    fn chat_lists() {
        assert_eq!(
            parse_chat_list("c_a1, c_b2,").unwrap(),
            vec!["c_a1".to_owned(), "c_b2".to_owned()]
        );
        assert!(parse_chat_list("").is_err());
        assert!(parse_chat_list("c_a1,+972501234567").is_err());
        assert!(parse_chat_list("972501234567@s.whatsapp.net").is_err());
    }
}
