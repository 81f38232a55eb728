//! Formatting shared by the commands: times, validity intervals, aligned fields, JSON.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cairn::Validity;
use serde::Serialize;

use crate::error::CliError;

/// Width of the key column of [`write_field`].
const KEY_WIDTH: usize = 10;

/// Times print as RFC 3339 in UTC, the library's one form.
pub use cairn::format_time_ms;

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

/// Progress of the long steps of `repo` (index builds, embedding, gc, fsck) on standard
/// error while the returned value lives: a bar for each run of a step whose total is
/// known (`indexing node chunks [=====>    ] 120/400 (3s)`), a count with a spinner
/// otherwise, and `what` with the elapsed time before the first report. `None`
/// (nothing shown, no observer set) when stderr is not a terminal. Cleared, and the
/// repository's observer removed, when dropped.
pub fn progress(repo: &cairn::Repo, what: &str) -> Option<ProgressDisplay> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner()
        .with_style(style(Shape::Waiting))
        .with_prefix(what.to_owned());
    bar.enable_steady_tick(TICK);
    let bar = Arc::new(Mutex::new(bar));
    let shown = Arc::clone(&bar);
    // The step and total of the run on screen: a new run gets a new bar, set up before it
    // is first drawn (changing a drawn bar's style, length and message shows in-between
    // states).
    let current: Mutex<Option<(cairn::Step, Option<u64>)>> = Mutex::new(None);
    repo.set_progress(Some(Arc::new(move |p: &cairn::Progress| {
        let mut current = current.lock().unwrap_or_else(PoisonError::into_inner);
        let mut bar = shown.lock().unwrap_or_else(PoisonError::into_inner);
        if *current != Some((p.step, p.total)) || p.done == 0 {
            *current = Some((p.step, p.total));
            let next = match p.total {
                Some(total) => indicatif::ProgressBar::new(total).with_style(style(Shape::Bar)),
                None => indicatif::ProgressBar::new_spinner().with_style(style(Shape::Count)),
            }
            .with_message(p.step.label())
            .with_position(p.done);
            bar.finish_and_clear();
            next.enable_steady_tick(TICK);
            *bar = next;
        } else {
            bar.set_position(p.done);
        }
    })));
    Some(ProgressDisplay {
        bar,
        repo: repo.clone(),
    })
}

/// How often a [`progress`] display redraws by itself (its spinner and elapsed time).
const TICK: Duration = Duration::from_millis(120);

/// What a [`progress`] display shows.
enum Shape {
    /// No report yet: the command's description and the elapsed time.
    Waiting,
    /// A run with a known total.
    Bar,
    /// A run without one: a count.
    Count,
}

fn style(shape: Shape) -> indicatif::ProgressStyle {
    let template = match shape {
        Shape::Waiting => "{spinner} {prefix} ({elapsed})",
        Shape::Bar => "{spinner} {msg} [{wide_bar}] {pos}/{len} ({elapsed})",
        Shape::Count => "{spinner} {msg} {pos} ({elapsed})",
    };
    indicatif::ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner())
}

/// See [`progress`].
pub struct ProgressDisplay {
    bar: Arc<Mutex<indicatif::ProgressBar>>,
    repo: cairn::Repo,
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        self.repo.set_progress(None);
        self.bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish_and_clear();
    }
}

/// A time argument: any form [`cairn::parse_time_ms`] reads.
pub fn parse_time(s: &str) -> Result<i64, String> {
    cairn::parse_time_ms(s).ok_or_else(|| format!("expected {}", cairn::TIME_FORMS))
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
