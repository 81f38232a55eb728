"""Shared fixtures: a small deterministic corpus, and the `cairn` CLI binary."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

import cairn

CRATE = pathlib.Path(__file__).resolve().parent.parent
README = CRATE.parent.parent / "README.md"

# Fixed commit times, so commit ids and validity defaults are the same on every run.
T0 = 1_750_000_000_000


def fill(repo: cairn.Repo) -> str:
    """Writes the test corpus in one commit at T0 and returns the commit id."""
    with repo.transaction("corpus", author="tests", timestamp_ms=T0) as tx:
        tx.put_node(
            cairn.Node(
                "doc-1",
                labels=["Document"],
                text="how wings stall at high angle of attack",
                props={"year": 1971, "lang": "en"},
                embeddings={"m": [1.0, 0.0, 0.0, 0.0]},
            )
        )
        tx.put_node(
            cairn.Node(
                "doc-2",
                labels=["Document"],
                text="boundary layers separate before the stall",
                props={"year": 1985, "lang": "en"},
                embeddings={"m": [0.5, 0.5, 0.0, 0.0]},
            )
        )
        tx.put_node(
            cairn.Node(
                "doc-3",
                labels=["Document"],
                text="laminar flow over a flat plate",
                props={"year": 2001, "lang": "de"},
                embeddings={"m": [0.0, 0.0, 1.0, 0.0]},
            )
        )
        tx.put_node(cairn.Node("note-1", labels=["Note"], text="stall warning horn", embeddings={"m": [0.0, 1.0, 0.0, 0.0]}))
        tx.put_edge(cairn.Edge("doc-1", "doc-2", "cites"))
        tx.put_edge(cairn.Edge("doc-2", "doc-3", "cites", weight=0.5))
        tx.put_edge(cairn.Edge("note-1", "doc-1", "about"))
    assert tx.commit_id is not None
    return tx.commit_id


@pytest.fixture
def repo() -> cairn.Repo:
    """An in-memory repository holding the corpus."""
    r = cairn.Repo.in_memory()
    fill(r)
    return r


def cli_binary() -> str | None:
    """The `cairn` CLI: $CAIRN_BIN, else the main workspace's target/debug/cairn."""
    env = os.environ.get("CAIRN_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    p = CRATE.parent.parent / "target" / "debug" / "cairn"
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    return shutil.which("cairn")


@pytest.fixture
def cli() -> str:
    """The CLI binary, or skip."""
    b = cli_binary()
    if b is None:
        pytest.skip(
            "no `cairn` CLI binary: build it with `cargo build -p cairn-cli` at the repository root, or set CAIRN_BIN"
        )
    return b
