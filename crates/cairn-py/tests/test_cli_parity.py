"""Python and the CLI give byte-identical retrieval results for the same spec."""

import json
import subprocess

import numpy as np

import cairn
from conftest import fill

SPECS = [
    {"text": "stall", "limit": 3},
    {
        "text": "wings stall",
        "vector": {"model": "m", "embedding": [0.5, 0.5, 0.0, 0.0]},
        "labels_all": ["Document"],
        "where": [{"key": "lang", "op": "eq", "value": "en"}],
        "expand": {"hops": 2, "max_nodes": 10},
        "token_budget": 200,
        "limit": 5,
        "explain": True,
    },
    {"vector": {"model": "m", "embedding": [0.0, 1.0, 0.0, 0.0]}, "valid_at": "all_time", "render_props": ["year"]},
    {"list": True, "labels_any": ["Note", "Document"], "limit": 2, "after": "doc-1"},
]


def cli_retrieve(cli: str, path, spec: str) -> str:
    out = subprocess.run(
        [cli, "--repo", str(path), "retrieve", "--spec", spec, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert out.endswith("\n")
    return out[:-1]


def test_same_bytes_as_cli(cli, tmp_path):
    path = tmp_path / "memory"
    with cairn.Repo.init(path) as repo:
        fill(repo)
        ours = [repo.retrieve_json(json.dumps(s)) for s in SPECS]
        # The keyword form (with a NumPy query vector) gives the same bytes too.
        kw = repo.retrieve(
            "wings stall",
            vector=np.array([0.5, 0.5, 0.0, 0.0], dtype=np.float32),
            model="m",
            labels="Document",
            where={"lang": "en"},
            expand={"hops": 2, "max_nodes": 10},
            token_budget=200,
            limit=5,
            explain=True,
        ).json
        assert kw == ours[1]
    # The repository is closed: the CLI (another process) may open it.
    for spec, expected in zip(SPECS, ours):
        assert cli_retrieve(cli, path, json.dumps(spec)) == expected, spec
    assert all(json.loads(o)["items"] for o in ours)
