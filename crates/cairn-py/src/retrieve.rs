//! Retrieval from Python: a spec (the JSON form of [`RetrieveSpec`]) in, the result's
//! JSON out — the very bytes `cairn retrieve --json` prints for the same spec and commit.
//! The query vector may come apart from the spec, read from a `float32` buffer without a
//! JSON round trip. Retrieval runs without the GIL, so threads query in parallel.

use cairn::retrieve::{Retrieval, RetrieveError, RetrieveSpec, VectorQuery};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::OrPyErr;
use crate::repo::PyRepo;

/// Runs `spec` on `repo` without the GIL and serializes the result.
fn run(py: Python<'_>, repo: &PyRepo, spec: RetrieveSpec) -> PyResult<String> {
    let repo = repo.repo()?;
    let result = py
        .allow_threads(|| Retrieval::from_spec(&repo, spec).execute())
        .py_err()?;
    Ok(serde_json::to_string(&result).expect("a retrieval result serializes"))
}

#[pymethods]
impl PyRepo {
    /// Runs the retrieval `spec_json` (a JSON retrieval spec, the `cairn retrieve --spec`
    /// form) and returns the result as JSON, byte for byte what the CLI prints with
    /// `--json` (without its final newline).
    fn retrieve_json(&self, py: Python<'_>, spec_json: &str) -> PyResult<String> {
        let spec = RetrieveSpec::from_json(spec_json).py_err()?;
        run(py, self, spec)
    }

    /// Runs the retrieval `spec` (a dict in the JSON spec's form) with, if given, the
    /// dense query `vector` of `model` (a float32 buffer such as a NumPy array, or a
    /// sequence of numbers), and returns the result as JSON.
    #[pyo3(signature = (spec, vector=None, model=None))]
    fn retrieve_spec(
        &self,
        py: Python<'_>,
        spec: &Bound<'_, PyAny>,
        vector: Option<&Bound<'_, PyAny>>,
        model: Option<String>,
    ) -> PyResult<String> {
        let json = convert::to_json(spec, "spec")?;
        let mut spec: RetrieveSpec = serde_json::from_value(json)
            .map_err(|e| RetrieveError::MalformedSpec { message: e.to_string() })
            .py_err()?;
        match (vector, model) {
            (Some(v), Some(model)) => {
                let embedding = convert::to_vector(v, "vector")?;
                spec.vector = Some(VectorQuery { model, embedding });
            }
            (None, None) => {}
            (Some(_), None) => {
                return Err(RetrieveError::InvalidSetting {
                    field: "vector".into(),
                    reason: "a query vector needs its `model`".into(),
                })
                .py_err()
            }
            (None, Some(_)) => {
                return Err(RetrieveError::InvalidSetting {
                    field: "model".into(),
                    reason: "`model` names the dense model of a query `vector`, and none was given".into(),
                })
                .py_err()
            }
        }
        run(py, self, spec)
    }
}
