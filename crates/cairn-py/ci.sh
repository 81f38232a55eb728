#!/usr/bin/env bash
# Builds the `cairn` Python package (crates/cairn-py) into a fresh virtualenv and runs its
# tests. Works from a fresh clone: needs python3 (>= 3.11, with venv), a Rust toolchain,
# and PyPI + crates.io.
#
#   bash crates/cairn-py/ci.sh
#
# Steps: rustfmt check and clippy on the crate (-D warnings); a venv in crates/cairn-py/.venv with maturin,
# pytest and numpy from PyPI; `maturin develop` (debug build, in the repository's target/,
# shared with the workspace so the library and its dependencies are built once);
# the `cairn` CLI (`cargo build -p cairn-cli` in the main target dir, for the test that
# compares Python's retrieval bytes with the CLI's; CAIRN_BIN overrides it); pytest.
#
# Environment: PYTHON (default python3); CAIRN_PY_SKIP_CLIPPY=1 skips fmt and clippy;
# CAIRN_PY_SKIP_CLI=1 does not build the CLI (that test then skips, saying why).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
cd "$here"
# One target directory for the workspace and this crate: the path crates and every
# dependency they share are compiled once, not twice (and the disk holds one copy).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

# This crate has its own Cargo.lock: it must stay current with the library's
# dependencies (a stale one made every build rewrite it). `--locked` fails, naming the
# change, when it is not; `cargo update -p cairn-py` (or any build) brings it up to date.
echo "== cairn-py: Cargo.lock is current"
cargo metadata --locked --format-version 1 > /dev/null

if [ "${CAIRN_PY_SKIP_CLIPPY:-0}" != 1 ]; then
    echo "== cairn-py: cargo fmt --check, cargo clippy"
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings
fi

echo "== cairn-py: virtualenv"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "maturin>=1.5,<2" pytest numpy
# langchain-core for the LangChain tests (the README's path): best effort, those tests
# skip, saying why, where it cannot be installed.
.venv/bin/python -m pip install --quiet langchain-core \
  || echo "warning: could not install langchain-core; the LangChain tests will skip" >&2

echo "== cairn-py: maturin develop"
# maturin finds the venv through VIRTUAL_ENV.
VIRTUAL_ENV="$here/.venv" PATH="$here/.venv/bin:$PATH" .venv/bin/maturin develop

if [ "${CAIRN_PY_SKIP_CLI:-0}" != 1 ] && [ -z "${CAIRN_BIN:-}" ]; then
    echo "== cairn-py: the cairn CLI (for the byte-identity test)"
    (cd "$root" && cargo build -p cairn-cli)
fi

echo "== cairn-py: pytest"
.venv/bin/python -m pytest -q tests
