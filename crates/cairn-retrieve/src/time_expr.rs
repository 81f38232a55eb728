//! Explicit time expressions in a query's text, turned into time windows (UTC, half-open
//! `[start, end)` in ms since the epoch) by [`find_time_expressions`]. Used by the
//! [`RulePlanner`](crate::RulePlanner); deterministic, and relative expressions are
//! resolved against a reference time the caller passes (the retrieval's validity time or
//! its commit's time), never the wall clock.
//!
//! What is recognised is the grammar of [`cairn_index::dates`], the same one that reads the
//! dates a node's text mentions (so `from 1916 to 1920` in a question and `1916–1920` in a
//! paragraph name the same years): ISO dates, `May 4, 2023` and its variants, `July 2023`,
//! a year in context (`in 1995`, `from 1811`, at the end of a clause), decades (`the
//! 1990s`), ranges of any of these (`from 1916 to 1920`, `between 1990 and 1995`,
//! `1916–20`, `from 1975 to Feb 2016`), and — in a query only — the relative words (`on May
//! 4`, `in May`, `last May`, `yesterday`, `today`, `last week`, `this month`, `last year`),
//! resolved against the reference day. A bare number followed by a word without a cue
//! (`2019 papers`, `the 1950 wing`) is left alone — it is as often a count or a model
//! number as a year — and so is a decimal (`2019.5`). `since 2019` and `before 2019` give
//! the year itself: the boosts this feeds are soft, and near misses still get part of
//! them.

use cairn_index::dates::{find_dates, DateMode};
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
    let reference_day = reference_ms.div_euclid(DAY_MS);
    find_dates(query, DateMode::Query { reference_day })
        .into_iter()
        .map(|m| TimeExpression {
            text: query[m.start..m.end].to_string(),
            window: TimeWindow::days(i64::from(m.span.start), m.span.days()),
        })
        .collect()
}
