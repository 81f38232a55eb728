//! `cairn export [REV] [-o FILE]`: one revision as JSON Lines in the import format
//! ([`cairn::Repo::export_jsonl`]); `cairn import` of the output into an empty repository gives the
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
    /// to it, renamed into place only once complete; a device or pipe is written
    /// directly).
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
        let summary = repo
            .export_jsonl(&rev, &mut *ctx.out)
            .map_err(|e| export_error(e, None))?;
        let line = if args.json {
            serde_json::to_string(&summary)?
        } else {
            describe(&summary)
        };
        let _ = writeln!(io::stderr(), "{line}");
        return Ok(());
    };

    let summary = write_atomically(&path, |out| {
        repo.export_jsonl(&rev, out).map_err(|e| export_error(e, Some(&path)))
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

/// Runs `write` on a new temporary file in the directory of `path` (of the file it links
/// to, for a symbolic link); once it succeeds, flushes and syncs the file and renames it
/// to `path`. On any failure the temporary file is removed and `path` is left as it was.
/// A `path` that exists and is not a regular file (a device such as `/dev/stdout`, a
/// pipe) is written directly: renaming over it would replace it.
fn write_atomically<T>(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<T, CliError>) -> Result<T, CliError> {
    let file_error = |e: io::Error| CliError::Output(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(file_error)?,
        _ => path.to_path_buf(),
    };
    if fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
        let file = OpenOptions::new().write(true).open(&target).map_err(file_error)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let value = write(&mut out)?;
        out.flush().map_err(file_error)?;
        return Ok(value);
    }

    let name = target
        .file_name()
        .ok_or_else(|| CliError::Refused(format!("-o {}: not a file name", path.display())))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(".{}.{}.export-tmp", name.to_string_lossy(), std::process::id()));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(file_error)?;

    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let value = write(&mut out)?;
        let file: File = out.into_inner().map_err(|e| file_error(e.into_error()))?;
        file.sync_all().map_err(file_error)?;
        drop(file);
        fs::rename(&tmp, &target).map_err(file_error)?;
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

/// The error to report for a failed export: a failed write as the I/O error it was (a
/// closed pipe stays a closed pipe; with the file's name when writing to one), else the
/// library's.
fn export_error(e: cairn::Error, path: Option<&Path>) -> CliError {
    match (e, path) {
        (cairn::Error::Write { source, .. }, Some(path)) => {
            CliError::Output(io::Error::new(source.kind(), format!("{}: {source}", path.display())))
        }
        (cairn::Error::Write { source, .. }, None) => CliError::Output(source),
        (e, _) => CliError::Cairn(e),
    }
}
