//! Explicit time expressions in a query's text, turned into time windows (UTC, half-open
//! `[start, end)` in ms since the epoch) by [`find_time_expressions`]. Used by the
//! [`RulePlanner`](crate::RulePlanner); deterministic, and relative expressions are
//! resolved against a reference time the caller passes (the retrieval's validity time or
//! its commit's time), never the wall clock.
//!
//! Recognised (case-insensitive; months by full name or three-letter abbreviation, `sept`
//! too; days with or without `st`/`nd`/`rd`/`th`):
//!
//! | expression | window |
//! |---|---|
//! | `2023-05-04` (ISO date, with or without a leading `on`) | that day |
//! | `May 4, 2023`, `May 4 2023`, `4 May 2023`, `May 4th, 2023` | that day |
//! | `on May 4` (a day without a year, after `on`) | that day in the latest year that puts it on or before the reference day |
//! | `July 2023`, `in July 2023` | that month |
//! | `last May` | the latest May that *ended* before the reference month began (in May 2024, `last May` is May 2023) |
//! | `in May`, `this May` | the latest May that began on or before the reference time |
//! | `2019` after `in`, `during`, `since`, `from`, `of`, `until`, `till`, `before`, `after`, `around`, `by`, `circa`, `year` — or at the end of the query or of a clause (followed by `,` `;` `?` `!` `.` or nothing) | that year (1900–2100 only) |
//! | `yesterday`, `today` | that day |
//! | `last week`, `this week` | that Monday-to-Sunday week |
//! | `last month`, `this month`, `last year`, `this year` | that calendar month or year |
//!
//! Not recognised, on purpose: a bare number followed by a word (`2019 papers`, `the 1950
//! wing`, `mach 2019`) — it is as often a count or a model number as a year; a decimal
//! (`2019.5`); a month name alone (`may` is also a verb); ranges (`2019-2020` gives two
//! years), durations and other relative phrases (`two weeks ago`). `since 2019` and
//! `before 2019` give the year itself: the boost this feeds is soft, and near misses still
//! get part of it.

use serde::{Deserialize, Serialize};

/// What [`parse_time_ms`] accepts, for error messages.
pub const TIME_FORMS: &str =
    "ms since the epoch, an RFC 3339 time (2024-06-01T09:30:00+02:00), a time without an offset \
     (2024-06-01T09:30:00, 2024-06-01 09:30; read as UTC) or a date (2024-06-01; midnight UTC)";

/// Why a string is not a time ([`parse_time`]): it names the input and the forms a time
/// takes ([`TIME_FORMS`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a time: expected {TIME_FORMS}")]
pub struct TimeParseError {
    /// The string given.
    pub input: String,
}

/// [`parse_time_ms`] as a `Result`, so that `?` works and the error says why.
///
/// ```
/// use cairn_retrieve::time_expr::parse_time;
/// assert_eq!(parse_time("2024-06-01"), Ok(1_717_200_000_000));
/// let err = parse_time("June 1st").unwrap_err();
/// assert!(err.to_string().starts_with("\"June 1st\" is not a time: expected ms since the epoch"));
/// ```
pub fn parse_time(s: &str) -> Result<i64, TimeParseError> {
    parse_time_ms(s).ok_or_else(|| TimeParseError { input: s.to_string() })
}

/// Parses a time, as ms since the epoch: integer ms; RFC 3339 (`2024-06-01T09:30:00Z`,
/// `…+02:00`); a date and time without an offset (`2024-06-01T09:30:00`, `2024-06-01T09:30`,
/// a space for the `T`, optional fractions of a second), which is read as **UTC**; or a
/// plain date (`2024-06-01`), midnight UTC. The zone rule is fixed, never the machine's
/// local zone, so the same input means the same instant everywhere.
///
/// ```
/// use cairn_retrieve::time_expr::parse_time_ms;
/// assert_eq!(parse_time_ms("2024-06-01"), Some(1_717_200_000_000));
/// assert_eq!(parse_time_ms("2024-06-01T00:00:00"), parse_time_ms("2024-06-01T00:00:00Z"));
/// assert_eq!(parse_time_ms("2024-06-01 02:00"), parse_time_ms("2024-06-01T04:00:00+02:00"));
/// assert_eq!(parse_time_ms("1717200000000"), Some(1_717_200_000_000));
/// assert_eq!(parse_time_ms("June 1st"), None);
/// ```
pub fn parse_time_ms(s: &str) -> Option<i64> {
    use time::macros::format_description;
    use time::{Date, OffsetDateTime, PrimitiveDateTime};
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let t = if let Ok(t) = OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339) {
        t
    } else if let Ok(d) = Date::parse(s, format_description!("[year]-[month]-[day]")) {
        d.midnight().assume_utc()
    } else {
        let s = s.replacen(' ', "T", 1);
        let form = format_description!(
            version = 2,
            "[year]-[month]-[day]T[hour]:[minute][optional [:[second][optional [.[subsecond]]]]]"
        );
        PrimitiveDateTime::parse(&s, form).ok()?.assume_utc()
    };
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// A time (ms since the epoch) as RFC 3339 in UTC, the way Cairn prints times:
/// `2024-06-01T00:00:00Z`, with a fraction only when there is one
/// (`2024-06-01T09:30:00.25Z`); a value outside the calendar (beyond year 9999) prints
/// as `N ms`. [`parse_time_ms`] reads every output back to the same `ms`.
///
/// ```
/// use cairn_retrieve::time_expr::{format_time_ms, parse_time_ms};
/// assert_eq!(format_time_ms(1_717_200_000_000), "2024-06-01T00:00:00Z");
/// assert_eq!(format_time_ms(1_717_234_200_250), "2024-06-01T09:30:00.25Z");
/// assert_eq!(format_time_ms(-1), "1969-12-31T23:59:59.999Z");
/// assert_eq!(parse_time_ms(&format_time_ms(-1)), Some(-1));
/// assert_eq!(format_time_ms(i64::MAX), format!("{} ms", i64::MAX));
/// ```
pub fn format_time_ms(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// A half-open time window `[start_ms, end_ms)`, ms since the epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TimeWindow {
    /// First millisecond in the window.
    pub start_ms: i64,
    /// First millisecond after the window.
    pub end_ms: i64,
}

impl TimeWindow {
    /// Whole UTC days `[first, first + days)` (days since the epoch).
    fn days(first: i64, days: i64) -> TimeWindow {
        TimeWindow {
            start_ms: first * DAY_MS,
            end_ms: (first + days) * DAY_MS,
        }
    }

    /// Milliseconds between the window and the interval `[from, until)` (0 if they
    /// overlap).
    ///
    /// ```
    /// use cairn_retrieve::TimeWindow;
    /// let w = TimeWindow { start_ms: 100, end_ms: 200 };
    /// assert_eq!(w.gap_ms(150, 160), 0);
    /// assert_eq!(w.gap_ms(0, 100), 1); // ends just before the window's first millisecond
    /// assert_eq!(w.gap_ms(250, 300), 51);
    /// ```
    pub fn gap_ms(&self, from: i64, until: i64) -> i64 {
        if until <= self.start_ms {
            // `until` is exclusive: the interval's last millisecond is `until - 1`.
            self.start_ms.saturating_sub(until).saturating_add(1)
        } else if from >= self.end_ms {
            from.saturating_sub(self.end_ms).saturating_add(1)
        } else {
            0
        }
    }
}

/// A time expression recognised in a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeExpression {
    /// The expression as written in the query.
    pub text: String,
    /// The window it names.
    pub window: TimeWindow,
}

/// The time expressions of `query`, in query order, resolved against `reference_ms`
/// (see the [module docs](self) for what is recognised).
///
/// ```
/// use cairn_retrieve::time_expr::find_time_expressions;
/// // 2024-06-15T00:00:00Z
/// let now = 1_718_409_600_000;
/// let found = find_time_expressions("what did I do in July 2023 and last May?", now);
/// assert_eq!(found[0].text, "July 2023");
/// assert_eq!(found[0].window.start_ms, 1_688_169_600_000); // 2023-07-01
/// assert_eq!(found[1].text, "last May");
/// assert_eq!(found[1].window.start_ms, 1_714_521_600_000); // 2024-05-01
/// assert!(find_time_expressions("2019 papers on wing stall", now).is_empty());
/// ```
pub fn find_time_expressions(query: &str, reference_ms: i64) -> Vec<TimeExpression> {
    let toks = tokenize(query);
    let today = reference_ms.div_euclid(DAY_MS);
    let (ref_y, ref_m, _) = civil_from_days(today);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match match_at(query, &toks, i, today, ref_y, ref_m) {
            Some((window, end)) => {
                out.push(TimeExpression {
                    text: query[toks[i].start..toks[end - 1].end].to_string(),
                    window,
                });
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// A word of the query: lowercased text and its byte span in the query.
#[derive(Debug, Clone)]
struct Tok {
    text: String,
    start: usize,
    end: usize,
}

fn tokenize(query: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in query.char_indices().chain(std::iter::once((query.len(), ' '))) {
        match (start, c.is_alphanumeric()) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push(Tok {
                    text: query[s..i].to_lowercase(),
                    start: s,
                    end: i,
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// 1-based month of a month name or abbreviation.
fn month(word: &str) -> Option<u32> {
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word)))
        .map(|i| i as u32 + 1)
}

/// A day of the month: `4`, `04`, `4th`.
fn day(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !(suffix.is_empty() || ["st", "nd", "rd", "th"].contains(&suffix)) {
        return None;
    }
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// A four-digit year in 1000..=9999.
fn year(word: &str) -> Option<i64> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| *y >= 1000)
}

/// Words after which a bare number is read as a year.
const YEAR_PREPOSITIONS: [&str; 13] = [
    "after", "around", "before", "by", "circa", "during", "from", "in", "of", "since", "till", "until", "year",
];

/// The text between token `i` and the next one (or the end of the query).
fn gap_after<'q>(query: &'q str, toks: &[Tok], i: usize) -> &'q str {
    let end = toks.get(i + 1).map_or(query.len(), |t| t.start);
    &query[toks[i].end..end]
}

/// Tries every pattern at token `i`; returns the window and the token index after the
/// match.
fn match_at(query: &str, toks: &[Tok], i: usize, today: i64, ref_y: i64, ref_m: u32) -> Option<(TimeWindow, usize)> {
    let w = |k: usize| toks.get(k).map(|t| t.text.as_str());
    let sep = |k: usize| gap_after(query, toks, k);
    let day_window =
        |y: i64, m: u32, d: u32| valid_date(y, m, d).then(|| TimeWindow::days(days_from_civil(y, m, d), 1));
    let cur = w(i)?;

    // ISO date: 2023-05-04 (an optional `on` before it is not part of the span).
    if let (Some(y), Some(m), Some(d)) = (year(cur), w(i + 1), w(i + 2)) {
        if sep(i) == "-" && sep(i + 1) == "-" && m.len() <= 2 && d.len() <= 2 {
            if let (Ok(m), Ok(d)) = (m.parse::<u32>(), d.parse::<u32>()) {
                if let Some(win) = day_window(y, m, d) {
                    return Some((win, i + 3));
                }
            }
        }
    }
    // Month D(th)(,) YYYY | Month YYYY.
    if let Some(m) = month(cur) {
        if let Some(d) = w(i + 1).and_then(day) {
            if let Some(y) = w(i + 2).and_then(year) {
                if let Some(win) = day_window(y, m, d) {
                    return Some((win, i + 3));
                }
            }
        }
        if let Some(y) = w(i + 1).and_then(year) {
            if sep(i).trim().is_empty() {
                return Some((month_window(y, m), i + 2));
            }
        }
    }
    // D Month YYYY.
    if let (Some(d), Some(m), Some(y)) = (day(cur), w(i + 1).and_then(month), w(i + 2).and_then(year)) {
        if let Some(win) = day_window(y, m, d) {
            return Some((win, i + 3));
        }
    }
    // on Month D (no year): the latest such day on or before the reference day.
    if cur == "on" {
        if let (Some(m), Some(d)) = (w(i + 1).and_then(month), w(i + 2).and_then(day)) {
            if w(i + 3).and_then(year).is_none() {
                let (ry, _, _) = civil_from_days(today);
                for y in [ry, ry - 1] {
                    if valid_date(y, m, d) && days_from_civil(y, m, d) <= today {
                        return Some((TimeWindow::days(days_from_civil(y, m, d), 1), i + 3));
                    }
                }
            }
        }
    }
    // last / this / in + Month (no year), and the relative words.
    if matches!(cur, "last" | "this" | "in") {
        if let Some(m) = w(i + 1).and_then(month) {
            if w(i + 2).and_then(year).is_none() && w(i + 2).and_then(day).is_none() {
                let y = match cur {
                    // Ended before the reference month began.
                    "last" if m < ref_m => ref_y,
                    "last" => ref_y - 1,
                    // Began on or before the reference time.
                    _ if m <= ref_m => ref_y,
                    _ => ref_y - 1,
                };
                return Some((month_window(y, m), i + 2));
            }
        }
        if cur != "in" {
            let last = cur == "last";
            match w(i + 1) {
                Some("week") => {
                    let monday = today - (today + 3).rem_euclid(7);
                    let first = if last { monday - 7 } else { monday };
                    return Some((TimeWindow::days(first, 7), i + 2));
                }
                Some("month") => {
                    let (y, m) = if !last {
                        (ref_y, ref_m)
                    } else if ref_m == 1 {
                        (ref_y - 1, 12)
                    } else {
                        (ref_y, ref_m - 1)
                    };
                    return Some((month_window(y, m), i + 2));
                }
                Some("year") => {
                    let y = if last { ref_y - 1 } else { ref_y };
                    return Some((year_window(y), i + 2));
                }
                _ => {}
            }
        }
    }
    match cur {
        "yesterday" => return Some((TimeWindow::days(today - 1, 1), i + 1)),
        "today" => return Some((TimeWindow::days(today, 1), i + 1)),
        _ => {}
    }
    // A bare year, in context.
    if let Some(y) = year(cur).filter(|y| (1900..=2100).contains(y)) {
        let after = sep(i);
        let decimal = (after.starts_with('.') || after.starts_with(',')) && after.len() == 1 && i + 1 < toks.len();
        let preposition = i > 0 && YEAR_PREPOSITIONS.contains(&toks[i - 1].text.as_str());
        let clause_end = i + 1 == toks.len() || after.contains([',', ';', '?', '!', '.']);
        if !decimal && (preposition || clause_end) {
            return Some((year_window(y), i + 1));
        }
    }
    None
}

fn month_window(y: i64, m: u32) -> TimeWindow {
    let first = days_from_civil(y, m, 1);
    let next = if m == 12 {
        days_from_civil(y + 1, 1, 1)
    } else {
        days_from_civil(y, m + 1, 1)
    };
    TimeWindow::days(first, next - first)
}

fn year_window(y: i64) -> TimeWindow {
    let first = days_from_civil(y, 1, 1);
    TimeWindow::days(first, days_from_civil(y + 1, 1, 1) - first)
}

fn valid_date(y: i64, m: u32, d: u32) -> bool {
    if !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let len = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= len
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for z in [-800_000, -1, 0, 1, 59, 60, 11_016, 19_000, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "{z}");
        }
        assert!(valid_date(2024, 2, 29) && !valid_date(2023, 2, 29) && !valid_date(1900, 2, 29));
        assert!(valid_date(2000, 2, 29) && !valid_date(2023, 4, 31) && !valid_date(2023, 13, 1));
    }
}
