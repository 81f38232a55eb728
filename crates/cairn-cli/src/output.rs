//! Formatting shared by the commands: times, validity intervals, aligned fields, JSON.

use std::io::Write;

use cairn::Validity;
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::CliError;

/// Width of the key column of [`write_field`].
const KEY_WIDTH: usize = 10;

/// Milliseconds since the epoch as RFC 3339 in UTC (`2024-05-01T12:00:00.123Z`; no
/// fraction when it is zero). Out-of-range values fall back to `<ms> ms`.
pub fn format_time_ms(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// Like [`format_time_ms`], truncated to whole seconds (for aligned columns).
pub fn format_time_s(ms: i64) -> String {
    format_time_ms(ms - ms.rem_euclid(1000))
}

/// A validity interval in words: `always`, `from T`, `until T` or `from T until U`
/// (`until` is exclusive).
pub fn format_validity(v: &Validity) -> String {
    match (v.valid_from_ms, v.valid_until_ms) {
        (None, None) => "always".into(),
        (Some(f), None) => format!("from {}", format_time_ms(f)),
        (None, Some(u)) => format!("until {}", format_time_ms(u)),
        (Some(f), Some(u)) => format!("from {} until {}", format_time_ms(f), format_time_ms(u)),
    }
}

/// Writes `key` in an aligned column followed by `lines`, one per row (continuation rows
/// are indented under the first). Nothing but the key is written if `lines` is empty.
pub fn write_field<I, S>(out: &mut dyn Write, key: &str, lines: I) -> Result<(), CliError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut first = true;
    for line in lines {
        for row in line.as_ref().lines() {
            if first {
                writeln!(out, "{key:<KEY_WIDTH$} {row}")?;
                first = false;
            } else {
                writeln!(out, "{:<KEY_WIDTH$} {row}", "")?;
            }
        }
    }
    if first {
        writeln!(out, "{key}")?;
    }
    Ok(())
}

/// Writes `value` as pretty-printed JSON and a newline.
pub fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<(), CliError> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// A spinner on standard error for a step that may take a while (`building indexes`),
/// with the elapsed time; `None` (nothing shown) when stderr is not a terminal. Cleared
/// when dropped.
pub fn spinner(what: &str) -> Option<Spinner> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
    let bar = indicatif::ProgressBar::new_spinner()
        .with_style(style)
        .with_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(Spinner(bar))
}

/// See [`spinner`].
pub struct Spinner(indicatif::ProgressBar);

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// A time argument: any form [`cairn::rev::parse_time_ms`] reads.
pub fn parse_time(s: &str) -> Result<i64, String> {
    cairn::rev::parse_time_ms(s).ok_or_else(|| format!("expected {}", cairn::rev::TIME_FORMS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(format_time_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_time_ms(1_714_564_800_123), "2024-05-01T12:00:00.123Z");
        assert_eq!(format_time_s(1_714_564_800_123), "2024-05-01T12:00:00Z");
        assert_eq!(format_time_ms(i64::MAX), format!("{} ms", i64::MAX));
    }

    #[test]
    fn validity_in_words() {
        assert_eq!(format_validity(&Validity::ALWAYS), "always");
        assert_eq!(
            format_validity(&Validity::new(Some(0), Some(1000))),
            "from 1970-01-01T00:00:00Z until 1970-01-01T00:00:01Z"
        );
        assert_eq!(
            format_validity(&Validity::new(None, Some(0))),
            "until 1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn fields_align_and_continue() {
        let mut buf = Vec::new();
        write_field(&mut buf, "props", ["a = 1", "b = 2"]).unwrap();
        write_field(&mut buf, "text", ["two\nlines"]).unwrap();
        write_field(&mut buf, "empty", Vec::<String>::new()).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(
            s,
            "props      a = 1\n           b = 2\ntext       two\n           lines\nempty\n"
        );
    }
}
