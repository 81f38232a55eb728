//! Dates written in text: one grammar for a query's time expressions and for the dates a
//! node's text mentions. [`find_dates`] reads a string in one of two [`DateMode`]s and
//! returns each mention's byte span and the days it names, a half-open [`DaySpan`]
//! (whole UTC days since 1970-01-01, proleptic Gregorian). Deterministic: no clock, no
//! locale, no model; relative words are resolved against a reference day the caller
//! passes, and only in [`DateMode::Query`].
//!
//! Recognised in both modes (case-insensitive; months by full name or three-letter
//! abbreviation, `sept` too; days with or without `st`/`nd`/`rd`/`th`):
//!
//! | written | span |
//! |---|---|
//! | `2023-05-04` | that day |
//! | `May 4, 2023`, `May 4 2023`, `4 May 2023`, `May 4th, 2023` | that day |
//! | `July 2023` | that month |
//! | `1995` in context (below) | that year |
//! | `the 1990s`, `1990's` | that decade; `1800s` is the century |
//! | a range: any two of the above joined by `-`, `–`, `—`, `to`, `until`, `till`, `through`, or `between … and …` (`1916-1920`, `from 1916 to 1920`, `1916–20`, `from 1975 to Feb 2016`) | from the first one's start to the second one's end |
//!
//! A bare four-digit number in 1000..=2199 is a year only **in context**: after one of
//! [`YEAR_CUES`] (`in`, `since`, `from`, `during`, `early`, …) or `of` after one of
//! [`PERIOD_WORDS`] (`the summer of 1969`), right after `(`, at the end
//! of the text or of a clause (followed by `,` `;` `:` `?` `!` `.` `)` or nothing), or as
//! the first end of a range. Left alone, on purpose: a number followed by a word without a
//! cue before it (`1500 men`, `the 1950 wing`, `room 1204 is`), a decimal (`2019.5`), a
//! number with thousands separators (`2,019`), a currency amount (`$1999`), a percentage
//! (`1999%`), a year marked `BC`/`BCE`, and numbers out of range (`3017 N Street`).
//!
//! Only in [`DateMode::Query`], against the reference day: `on May 4` (the latest such day
//! on or before it), `in May` / `this May` (the latest May that began on or before it),
//! `last May` (the latest May that ended before the reference month began), `yesterday`,
//! `today`, `last week` / `this week` (Monday to Sunday), `last month` / `this month`,
//! `last year` / `this year`. A text says when it was written nowhere Cairn can trust, so
//! relative words in a node's text are left alone.
//!
//! [`text_dates`] is what a node chunk stores per node (`storage-format.md` §7.3.1): the
//! spans of its text, sorted, deduplicated, at most [`MAX_TEXT_DATES`].

/// A half-open range of whole UTC days `[start, end)`, days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DaySpan {
    /// First day.
    pub start: i32,
    /// First day after the span (`> start`).
    pub end: i32,
}

impl DaySpan {
    /// The span's length in days (≥ 1).
    pub fn days(&self) -> i64 {
        i64::from(self.end) - i64::from(self.start)
    }
}

/// One date mention: where it is written and the days it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateMention {
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset after its last character.
    pub end: usize,
    /// The days it names.
    pub span: DaySpan,
}

/// How [`find_dates`] reads a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateMode {
    /// A node's text: absolute dates only.
    Text,
    /// A query: absolute dates, and relative words resolved against `reference_day`
    /// (days since 1970-01-01).
    Query {
        /// The day "today" means.
        reference_day: i64,
    },
}

/// The most spans [`text_dates`] keeps for one text (the first ones written).
pub const MAX_TEXT_DATES: usize = 64;

/// Words after which a bare four-digit number is read as a year.
pub const YEAR_CUES: [&str; 23] = [
    "after", "around", "autumn", "before", "between", "by", "c", "ca", "circa", "during", "early", "fall", "from",
    "in", "late", "mid", "since", "spring", "summer", "till", "until", "winter", "year",
];

/// Words after which `of` is a cue too (`the summer of 1969`, `the end of 1995`; but
/// `an army of 1500 men` is a count).
pub const PERIOD_WORDS: [&str; 12] = [
    "autumn",
    "beginning",
    "course",
    "end",
    "fall",
    "half",
    "middle",
    "season",
    "spring",
    "start",
    "summer",
    "winter",
];

/// The dates a node's text mentions, as stored per node: the spans of the first
/// [`MAX_TEXT_DATES`] mentions in [`DateMode::Text`], sorted and deduplicated.
///
/// ```
/// use cairn_index::dates::{text_dates, days_from_civil};
/// let d = text_dates("Built in 1794, it was home of Newton D. Baker during 1916-1920.");
/// assert_eq!(d.len(), 2);
/// assert_eq!(i64::from(d[0].start), days_from_civil(1794, 1, 1));
/// assert_eq!(i64::from(d[1].end), days_from_civil(1921, 1, 1));
/// assert!(text_dates("an army of 1500 men").is_empty());
/// ```
pub fn text_dates(text: &str) -> Vec<DaySpan> {
    // Every date this grammar reads in a text has a number (relative words are read in
    // queries only), and every number it reads (a day, a month, a year) is a token that
    // starts with a digit: a text without such a token, most of them, costs one scan.
    if !may_hold_number(text) {
        return Vec::new();
    }
    let mut spans: Vec<DaySpan> = find_dates(text, DateMode::Text)
        .into_iter()
        .take(MAX_TEXT_DATES)
        .map(|m| m.span)
        .collect();
    spans.sort_unstable();
    spans.dedup();
    spans
}

/// Whether a token of `text` may start with an ASCII digit: a digit at the start or after
/// a byte that is not an ASCII letter or digit (after a non-ASCII byte the token may start
/// earlier, with a letter: answered `true`, to be safe).
///
/// Every text indexed passes through here: the bytes are tested a block of 64 at a time
/// without a branch per byte (the compiler vectorises the block), stopping after the first
/// block that holds such a digit.
fn may_hold_number(text: &str) -> bool {
    const BLOCK: usize = 64;
    let b = text.as_bytes();
    if b.first().is_some_and(u8::is_ascii_digit) {
        return true;
    }
    let starts = |p: &u8, c: &u8| c.is_ascii_digit() & !p.is_ascii_alphanumeric();
    let mut at = 1;
    while at < b.len() {
        let end = (at + BLOCK).min(b.len());
        let (prev, cur) = (&b[at - 1..end - 1], &b[at..end]);
        if prev.iter().zip(cur).fold(false, |hit, (p, c)| hit | starts(p, c)) {
            return true;
        }
        at = end;
    }
    false
}

/// Every date mention of `s`, in order, none overlapping (see the [module docs](self)).
///
/// ```
/// use cairn_index::dates::{find_dates, DateMode, days_from_civil};
/// let q = "Who owned the house from 1975 to Feb 2016?";
/// let found = find_dates(q, DateMode::Text);
/// assert_eq!(&q[found[0].start..found[0].end], "1975 to Feb 2016");
/// assert_eq!(i64::from(found[0].span.end), days_from_civil(2016, 3, 1));
/// ```
pub fn find_dates(s: &str, mode: DateMode) -> Vec<DateMention> {
    let toks = tokenize(s);
    let cx = Cx { s, toks: &toks, mode };
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // A date starts with a number or a month name (and in a query, a relative word):
        // other words are passed over without trying the patterns.
        let first = &*toks[i].text;
        let may_start = first.as_bytes()[0].is_ascii_digit()
            || month(first).is_some()
            || (matches!(mode, DateMode::Query { .. })
                && matches!(first, "on" | "last" | "this" | "in" | "yesterday" | "today"));
        if !may_start {
            i += 1;
            continue;
        }
        match cx.range_at(i) {
            Some((span, end)) => {
                if let Some(span) = span.to_days() {
                    out.push(DateMention {
                        start: toks[i].start,
                        end: toks[end - 1].end,
                        span,
                    });
                }
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
///
/// ```
/// use cairn_index::dates::days_from_civil;
/// assert_eq!(days_from_civil(1970, 1, 1), 0);
/// assert_eq!(days_from_civil(2000, 3, 1), 11_017);
/// ```
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The `(year, month, day)` of a day since 1970-01-01.
///
/// ```
/// use cairn_index::dates::civil_from_days;
/// assert_eq!(civil_from_days(11_017), (2000, 3, 1));
/// ```
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

/// True for a real calendar date.
pub fn valid_date(y: i64, m: u32, d: u32) -> bool {
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

/// A span in days, before it is checked to fit [`DaySpan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Days {
    start: i64,
    end: i64,
}

impl Days {
    fn day(y: i64, m: u32, d: u32) -> Option<Days> {
        valid_date(y, m, d).then(|| {
            let first = days_from_civil(y, m, d);
            Days {
                start: first,
                end: first + 1,
            }
        })
    }

    fn month(y: i64, m: u32) -> Days {
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        Days {
            start: days_from_civil(y, m, 1),
            end: days_from_civil(ny, nm, 1),
        }
    }

    fn years(first: i64, count: i64) -> Days {
        Days {
            start: days_from_civil(first, 1, 1),
            end: days_from_civil(first + count, 1, 1),
        }
    }

    fn to_days(self) -> Option<DaySpan> {
        let start = i32::try_from(self.start).ok()?;
        let end = i32::try_from(self.end).ok()?;
        (start < end).then_some(DaySpan { start, end })
    }
}

/// A word of the string: its lowercased text (borrowed when it is lowercase already, as
/// most words are) and its byte span.
#[derive(Debug, Clone)]
struct Tok<'a> {
    text: std::borrow::Cow<'a, str>,
    start: usize,
    end: usize,
}

fn tokenize(s: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    let bytes = s.as_bytes();
    let mut i = 0;
    // Byte by byte for ASCII (most text), a char at a time otherwise.
    while i <= bytes.len() {
        let (alnum, width) = match bytes.get(i) {
            None => (false, 1),
            Some(b) if b.is_ascii() => (b.is_ascii_alphanumeric(), 1),
            Some(_) => {
                let c = s[i..].chars().next().unwrap_or(' ');
                (c.is_alphanumeric(), c.len_utf8())
            }
        };
        match (start, alnum) {
            (None, true) => start = Some(i),
            (Some(b), false) => {
                let word = &s[b..i];
                let text = if word.chars().any(char::is_uppercase) {
                    std::borrow::Cow::Owned(word.to_lowercase())
                } else {
                    std::borrow::Cow::Borrowed(word)
                };
                out.push(Tok { text, start: b, end: i });
                start = None;
            }
            _ => {}
        }
        i += width;
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
    if !(3..=9).contains(&word.len())
        || !matches!(
            word.as_bytes()[0],
            b'j' | b'f' | b'm' | b'a' | b's' | b'o' | b'n' | b'd'
        )
    {
        return None;
    }
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

/// Four digits naming a year in 1000..=2199.
fn year(word: &str) -> Option<i64> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1000..=2199).contains(y))
}

/// Words that join the two ends of a range (`and` only after `between`).
const RANGE_WORDS: [&str; 5] = ["to", "until", "till", "through", "thru"];

struct Cx<'a> {
    s: &'a str,
    toks: &'a [Tok<'a>],
    mode: DateMode,
}

impl Cx<'_> {
    fn w(&self, k: usize) -> Option<&str> {
        self.toks.get(k).map(|t| &*t.text)
    }

    /// The text between token `k` and the next one (or the end of the string).
    fn gap_after(&self, k: usize) -> &str {
        let end = self.toks.get(k + 1).map_or(self.s.len(), |t| t.start);
        &self.s[self.toks[k].end..end]
    }

    /// The text between the previous token (or the start) and token `k`.
    fn gap_before(&self, k: usize) -> &str {
        let start = if k == 0 { 0 } else { self.toks[k - 1].end };
        &self.s[start..self.toks[k].start]
    }

    /// A date at `i`, extended to a range when a connector and a second date follow.
    /// Returns the span and the token index after the match.
    fn range_at(&self, i: usize) -> Option<(Days, usize)> {
        // A bare year without context still opens a range (`1916-1920`); alone it is
        // nothing.
        let (first, j, alone) = match self.date_at(i, false) {
            Some((d, j)) => (d, j, true),
            None => {
                let y = year(self.w(i)?)?;
                if !self.plain_number(i) {
                    return None;
                }
                (Days::years(y, 1), i + 1, false)
            }
        };
        let fallback = alone.then_some((first, j));
        // The connector: a dash in the gap, or a word.
        let (second_at, dash) = if j < self.toks.len() && is_dash(self.gap_after(j - 1).trim()) {
            (j, true)
        } else if let Some(word) = self.w(j) {
            let between = i > 0 && self.w(i - 1) == Some("between");
            if RANGE_WORDS.contains(&word) || (word == "and" && between) {
                (j + 1, false)
            } else {
                return fallback;
            }
        } else {
            return fallback;
        };
        let second = self.date_at(second_at, true).or_else(|| {
            // `1916–20`: two digits finish a year in the same century.
            let w = self.w(second_at)?;
            if !dash || w.len() != 2 || !w.bytes().all(|b| b.is_ascii_digit()) || j != i + 1 {
                return None;
            }
            let y = year(self.w(i)?)?;
            let end = y - y % 100 + w.parse::<i64>().ok()?;
            (end > y).then(|| (Days::years(end, 1), second_at + 1))
        });
        match second {
            Some((s, k)) if s.end > first.start => Some((
                Days {
                    start: first.start,
                    end: s.end,
                },
                k,
            )),
            _ => fallback,
        }
    }

    /// True if token `i` is a number standing alone: not part of a decimal, a number with
    /// thousands separators, a currency amount or a percentage, and not marked BC.
    fn plain_number(&self, i: usize) -> bool {
        let before = self.gap_before(i);
        let after = self.gap_after(i);
        let next_is_digits = self
            .w(i + 1)
            .is_some_and(|w| w.bytes().next().is_some_and(|b| b.is_ascii_digit()));
        let glued = |g: &str| g == "." || g == ",";
        if (glued(after) && next_is_digits)
            || (i > 0 && glued(before) && self.toks[i - 1].text.bytes().all(|b| b.is_ascii_digit()))
        {
            return false;
        }
        if before.ends_with(['$', '£', '€', '#', '¥']) || after.starts_with('%') {
            return false;
        }
        !matches!(self.w(i + 1), Some("bc" | "bce"))
    }

    /// One date (no range) at token `i`; `bare_year` accepts a year without context (the
    /// second end of a range).
    fn date_at(&self, i: usize, bare_year: bool) -> Option<(Days, usize)> {
        let cur = self.w(i)?;
        let w = |k: usize| self.w(k);
        // ISO date: 2023-05-04.
        if let (Some(y), Some(m), Some(d)) = (year(cur), w(i + 1), w(i + 2)) {
            if self.gap_after(i) == "-" && self.gap_after(i + 1) == "-" && m.len() <= 2 && d.len() <= 2 {
                if let (Ok(m), Ok(d)) = (m.parse::<u32>(), d.parse::<u32>()) {
                    if let Some(day) = Days::day(y, m, d) {
                        return Some((day, i + 3));
                    }
                }
            }
        }
        // Month D(th)(,) YYYY | Month YYYY.
        if let Some(m) = month(cur) {
            if let Some(d) = w(i + 1).and_then(day) {
                if let Some(y) = w(i + 2).and_then(year) {
                    if let Some(day) = Days::day(y, m, d) {
                        return Some((day, i + 3));
                    }
                }
            }
            if let Some(y) = w(i + 1).and_then(year) {
                if self.gap_after(i).trim().is_empty() {
                    return Some((Days::month(y, m), i + 2));
                }
            }
        }
        // D Month YYYY.
        if let (Some(d), Some(m), Some(y)) = (day(cur), w(i + 1).and_then(month), w(i + 2).and_then(year)) {
            if let Some(day) = Days::day(y, m, d) {
                return Some((day, i + 3));
            }
        }
        // Decades and centuries: 1990s, 1990's, 1800s.
        let decade = |y: &str| year(y).filter(|y| y % 10 == 0);
        let written = if cur.len() == 5 && cur.ends_with('s') {
            decade(&cur[..4]).map(|y| (y, i + 1))
        } else if w(i + 1) == Some("s") && matches!(self.gap_after(i), "'" | "’") {
            decade(cur).map(|y| (y, i + 2))
        } else {
            None
        };
        if let Some((y, end)) = written {
            let count = if y % 100 == 0 { 100 } else { 10 };
            return Some((Days::years(y, count), end));
        }
        if let DateMode::Query { reference_day } = self.mode {
            if let Some(found) = self.relative_at(i, reference_day) {
                return Some(found);
            }
        }
        // A bare year, in context.
        let y = year(cur)?;
        if !self.plain_number(i) {
            return None;
        }
        let after = self.gap_after(i);
        let cue = i > 0 && {
            let prev = &*self.toks[i - 1].text;
            YEAR_CUES.contains(&prev) || (prev == "of" && i > 1 && PERIOD_WORDS.contains(&&*self.toks[i - 2].text))
        };
        let paren = self.gap_before(i).ends_with('(');
        let clause_end = i + 1 == self.toks.len() || after.contains([',', ';', ':', '?', '!', '.', ')']);
        (bare_year || cue || paren || clause_end).then(|| (Days::years(y, 1), i + 1))
    }

    /// The relative expressions of a query at token `i`.
    fn relative_at(&self, i: usize, today: i64) -> Option<(Days, usize)> {
        let w = |k: usize| self.w(k);
        let cur = w(i)?;
        let (ref_y, ref_m, _) = civil_from_days(today);
        // on Month D (no year): the latest such day on or before the reference day.
        if cur == "on" {
            if let (Some(m), Some(d)) = (w(i + 1).and_then(month), w(i + 2).and_then(day)) {
                if w(i + 3).and_then(year).is_none() {
                    for y in [ref_y, ref_y - 1] {
                        if valid_date(y, m, d) && days_from_civil(y, m, d) <= today {
                            return Some((Days::day(y, m, d)?, i + 3));
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
                    return Some((Days::month(y, m), i + 2));
                }
            }
            if cur != "in" {
                let last = cur == "last";
                match w(i + 1) {
                    Some("week") => {
                        let monday = today - (today + 3).rem_euclid(7);
                        let first = if last { monday - 7 } else { monday };
                        return Some((
                            Days {
                                start: first,
                                end: first + 7,
                            },
                            i + 2,
                        ));
                    }
                    Some("month") => {
                        let (y, m) = if !last {
                            (ref_y, ref_m)
                        } else if ref_m == 1 {
                            (ref_y - 1, 12)
                        } else {
                            (ref_y, ref_m - 1)
                        };
                        return Some((Days::month(y, m), i + 2));
                    }
                    Some("year") => {
                        let y = if last { ref_y - 1 } else { ref_y };
                        return Some((Days::years(y, 1), i + 2));
                    }
                    _ => {}
                }
            }
        }
        match cur {
            "yesterday" => Some((
                Days {
                    start: today - 1,
                    end: today,
                },
                i + 1,
            )),
            "today" => Some((
                Days {
                    start: today,
                    end: today + 1,
                },
                i + 1,
            )),
            _ => None,
        }
    }
}

fn is_dash(gap: &str) -> bool {
    matches!(gap, "-" | "–" | "—")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for z in [-800_000, -1, 0, 1, 59, 60, 11_016, 19_000, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "{z}");
        }
        assert!(valid_date(2024, 2, 29) && !valid_date(2023, 2, 29) && !valid_date(1900, 2, 29));
        assert!(valid_date(2000, 2, 29) && !valid_date(2023, 4, 31) && !valid_date(2023, 13, 1));
    }

    /// The pre-check skips only texts in which the grammar finds nothing: a text it passes
    /// over has no token starting with a digit, and so no date.
    #[test]
    fn texts_the_number_check_skips_hold_no_date() {
        let texts = [
            "graph12x3 tree4x7 met",
            "x2016 y1975 May",
            "May 5th 2020",
            "met on 5th May 2020 (graph12x3)",
            "é2016 and 1999",
            "née2016",
            "Ünter 5 März 2020",
            "(1999)",
            "2016",
            "a1 b2 c3 in 1975",
            "12x3",
            "",
            "no digits at all",
        ];
        for t in texts {
            let found = find_dates(t, DateMode::Text);
            if !may_hold_number(t) {
                assert!(found.is_empty(), "{t:?}: {found:?}");
            }
            let mut spans: Vec<DaySpan> = found.into_iter().take(MAX_TEXT_DATES).map(|m| m.span).collect();
            spans.sort_unstable();
            spans.dedup();
            assert_eq!(text_dates(t), spans, "{t:?}");
        }
        assert!(!may_hold_number("graph12x3 tree4x7"));
        assert!(may_hold_number("(1999)") && may_hold_number("é2016") && may_hold_number("2016"));
    }

    #[test]
    fn the_block_scan_for_a_number_equals_the_byte_rule_across_block_edges() {
        let rule = |b: &[u8]| {
            b.iter()
                .enumerate()
                .any(|(i, c)| c.is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()))
        };
        for len in [1, 2, 63, 64, 65, 66, 127, 128, 129, 200] {
            for at in 0..len {
                for before in [b'a', b' ', b'7', b'-'] {
                    let mut t = vec![b'x'; len];
                    t[at] = b'5';
                    if at > 0 {
                        t[at - 1] = before;
                    }
                    let t = String::from_utf8(t).unwrap();
                    assert_eq!(may_hold_number(&t), rule(t.as_bytes()), "{len} {at} {before}");
                }
            }
        }
    }
}
