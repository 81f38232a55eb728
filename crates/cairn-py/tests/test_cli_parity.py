"""Python and the CLI give byte-identical retrieval results for the same spec."""

import http.server
import json
import subprocess
import threading

import numpy as np

import cairn
from conftest import T0, fill

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


class _EmbedStub(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible embeddings stub: 4-d vectors, "wing" texts one way."""

    def do_POST(self) -> None:  # noqa: N802 (the handler's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = [
            {"index": i, "embedding": [1.0, 0.0, 0.0, 0.0] if "wing" in t else [0.0, 0.0, 1.0, 0.0]}
            for i, t in enumerate(body["input"])
        ]
        out = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


def test_a_text_query_is_embedded_as_the_cli_embeds_it(cli, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EmbedStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = tmp_path / "memory"
        with cairn.Repo.init(path) as repo:
            fill(repo)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        subprocess.run(
            [cli, "--repo", str(path), "embedder", "set", "m", "--openai", url, "stub",
             "--api-key-env", "CAIRN_TEST_NO_SUCH_KEY", "--retries", "0"],
            check=True,
            capture_output=True,
        )
        specs = [
            {"text": "wings stall", "limit": 3},
            {"text": "wings stall", "limit": 3, "embed": False},
            {"text": "laminar plate", "labels_all": ["Document"], "embedder": "m"},
        ]
        with cairn.Repo.open(path) as repo:
            ours = [repo.retrieve_json(json.dumps(s)) for s in specs]
            assert repo.retrieve("wings stall", limit=3).json == ours[0]
            assert repo.retrieve("wings stall", limit=3, embed=False).json == ours[1]
            assert repo.retrieve("laminar plate", labels="Document", embedder="m").json == ours[2]
        lanes = [[(lane["name"], lane.get("embedded", False)) for lane in json.loads(o)["lanes"]] for o in ours]
        assert lanes == [
            [("dense:m", True), ("text", False)],
            [("text", False)],
            [("dense:m", True), ("text", False)],
        ]
        for spec, expected in zip(specs, ours):
            assert cli_retrieve(cli, path, json.dumps(spec)) == expected, spec
        # A Python transaction embeds on write: the node has its vector in that commit.
        with cairn.Repo.open(path) as repo:
            with repo.transaction("a note", author="tests", timestamp_ms=T0 + 1) as tx:
                tx.put_node(cairn.Node("note-2", labels=["Note"], text="a wing flutters"))
            assert [float(x) for x in repo.node("note-2").embeddings["m"]] == [1.0, 0.0, 0.0, 0.0]
    finally:
        server.shutdown()
