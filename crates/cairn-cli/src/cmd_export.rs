//! `cairn export [REV] [-o FILE]`: one revision as JSON Lines in the import format
//! ([`cairn::export`]); `cairn import` of the output into an empty repository gives the
//! same node and edge roots.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use cairn::ExportSummary;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The revision to export [default: HEAD].
    #[arg(value_name = "REV")]
    rev: Option<String>,
    /// Write to this file instead of standard output (written to a temporary file next
    /// to it, renamed into place only once complete).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the summary ({"commit", "nodes", "edges"}) as JSON: on standard output with
    /// `-o`, else as one line on standard error.
    #[arg(long)]
    json: bool,
}

/// Exports the revision. Without `-o` the lines go to standard output and the summary to
/// standard error; with `-o` the summary goes to standard output.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    // Resolved once, before any file is created: an unknown revision leaves nothing
    // behind, and a branch that moves meanwhile does not change what is written.
    let commit = repo.resolve(args.rev.as_deref().unwrap_or("HEAD"))?;
    let rev = commit.to_hex();

    let Some(path) = args.output else {
        let mut out = Recording::new(&mut *ctx.out);
        let summary = repo.export_jsonl(&rev, &mut out).map_err(|e| out.error(e, None))?;
        let line = if args.json {
            serde_json::to_string(&summary)?
        } else {
            describe(&summary)
        };
        let _ = writeln!(io::stderr(), "{line}");
        return Ok(());
    };

    let summary = write_atomically(&path, |out| {
        let mut out = Recording::new(out);
        repo.export_jsonl(&rev, &mut out).map_err(|e| out.error(e, Some(&path)))
    })?;
    if args.json {
        write_json(ctx.out, &summary)?;
    } else {
        writeln!(ctx.out, "{} to {}", describe(&summary), path.display())?;
    }
    Ok(())
}

/// `exported 3 nodes and 1 edge of commit <hex>`.
fn describe(s: &ExportSummary) -> String {
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    format!(
        "exported {} node{} and {} edge{} of commit {}",
        s.nodes,
        plural(s.nodes),
        s.edges,
        plural(s.edges),
        s.commit
    )
}

/// Runs `write` on a new temporary file in `path`'s directory; once it succeeds, flushes
/// and syncs the file and renames it to `path`. On any failure the temporary file is
/// removed and `path` is left as it was.
fn write_atomically<T>(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<T, CliError>) -> Result<T, CliError> {
    let name = path
        .file_name()
        .ok_or_else(|| CliError::Refused(format!("-o {}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(".{}.{}.export-tmp", name.to_string_lossy(), std::process::id()));
    let file_error = |e: io::Error| CliError::Output(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| CliError::Output(io::Error::new(e.kind(), format!("{}: {e}", tmp.display()))))?;

    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let value = write(&mut out)?;
        let file: File = out.into_inner().map_err(|e| file_error(e.into_error()))?;
        file.sync_all().map_err(file_error)?;
        drop(file);
        fs::rename(&tmp, path).map_err(file_error)?;
        Ok(value)
    })();
    match written {
        Ok(value) => {
            // Make the rename itself durable (best effort: the file is complete either way).
            #[cfg(unix)]
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(value)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A writer that keeps (a copy of) the first I/O error it passed on, so that a failed
/// export is reported as the I/O error it was (a closed pipe stays a closed pipe, not a
/// library error).
struct Recording<'a> {
    inner: &'a mut dyn Write,
    failed: Option<io::Error>,
}

impl<'a> Recording<'a> {
    fn new(inner: &'a mut dyn Write) -> Recording<'a> {
        Recording { inner, failed: None }
    }

    /// The error to report for a failed export: the I/O error if a write failed (with the
    /// file's name when writing to one), else the library's.
    fn error(&mut self, e: cairn::Error, path: Option<&Path>) -> CliError {
        match (self.failed.take(), path) {
            (Some(io), Some(path)) => CliError::Output(io::Error::new(io.kind(), format!("{}: {io}", path.display()))),
            (Some(io), None) => CliError::Output(io),
            (None, _) => CliError::Cairn(e),
        }
    }

    fn keep<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            if self.failed.is_none() {
                self.failed = Some(io::Error::new(e.kind(), e.to_string()));
            }
        }
        r
    }
}

impl Write for Recording<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.keep(r)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let r = self.inner.write_all(buf);
        self.keep(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.keep(r)
    }
}
