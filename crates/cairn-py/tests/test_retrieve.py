"""Retrieval: typed results, the spec kwargs, NumPy vectors, threads."""

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cairn
from conftest import fill


def test_typed_result_matches_its_json(repo):
    r = repo.retrieve("stall", labels="Document", limit=2)
    assert isinstance(r, cairn.RetrievalResult)
    d = json.loads(r.json)
    assert r.commit == d["commit"] == repo.head()
    assert [i.id for i in r.items] == [i["id"] for i in d["items"]]
    assert len(r.items) == 2
    first = r.items[0]
    assert isinstance(first, cairn.RetrievedItem)
    assert first.rank == 1
    assert first.labels == ["Document"]
    assert "text" in first.lanes and isinstance(first.lanes["text"], cairn.LaneScore)
    assert first.node_text.startswith(("how wings", "boundary"))
    assert [l.name for l in r.lanes] == ["text"]
    assert all(i.labels == ["Document"] for i in r)


def test_kwargs_and_spec_json_agree(repo):
    kwargs_result = repo.retrieve(
        "stall",
        vector=[1.0, 0.0, 0.0, 0.0],
        model="m",
        labels=["Document"],
        where=[{"key": "year", "op": "range", "min": 1970, "max": 1990}],
        expand={"hops": 1, "max_nodes": 5},
        fusion="rrf",
        token_budget=500,
        limit=3,
        explain=True,
    )
    spec = {
        "text": "stall",
        "vector": {"model": "m", "embedding": [1.0, 0.0, 0.0, 0.0]},
        "labels_all": ["Document"],
        "where": [{"key": "year", "op": "range", "min": 1970, "max": 1990}],
        "expand": {"hops": 1, "max_nodes": 5},
        "fusion": {"method": "rrf"},
        "token_budget": 500,
        "limit": 3,
        "explain": True,
    }
    assert repo.retrieve_json(json.dumps(spec)) == kwargs_result.json
    assert kwargs_result.items[0].explain is not None
    assert kwargs_result.token_budget == 500
    assert kwargs_result.tokens_budget == 500  # the earlier name, still readable


def test_where_dict_valid_at_and_at(repo):
    r = repo.retrieve("stall", where={"lang": "en"}, limit=10)
    assert {i.id for i in r.items} <= {"doc-1", "doc-2"}
    old = repo.head()
    with repo.transaction("late fact") as tx:
        tx.put_node(cairn.Node("doc-4", labels=["Document"], text="stall stall stall", valid_from="2100-01-01"))
    now = repo.retrieve("stall", limit=10)
    assert "doc-4" not in [i.id for i in now.items]
    future = repo.retrieve("stall", valid_at="2100-06-01T00:00:00Z", limit=10)
    assert "doc-4" in [i.id for i in future.items]
    assert future.valid_at == cairn.parse_time("2100-06-01T00:00:00Z")
    assert repo.retrieve("stall", valid_at="all_time", limit=10).valid_at is None
    before = repo.retrieve("stall", at=old, valid_at="all_time", limit=10)
    assert before.commit == old
    assert "doc-4" not in [i.id for i in before.items]


def test_numpy_vectors(repo):
    q = [0.5, 0.5, 0.0, 0.0]
    as_list = repo.retrieve(vector=q, model="m", limit=4).json
    f32 = np.array(q, dtype=np.float32)
    assert repo.retrieve(vector=f32, model="m", limit=4).json == as_list
    assert repo.retrieve(vector=np.array(q, dtype=np.float64), model="m", limit=4).json == as_list
    # A strided view goes through the buffer protocol too.
    strided = np.array([0.5, 9.0, 0.5, 9.0, 0.0, 9.0, 0.0, 9.0], dtype=np.float32)[::2]
    assert repo.retrieve(vector=strided, model="m", limit=4).json == as_list
    with pytest.raises(cairn.InvalidInput, match="one-dimensional"):
        repo.retrieve(vector=np.zeros((2, 2), dtype=np.float32), model="m")
    with pytest.raises(cairn.InvalidInput):
        repo.retrieve(vector="abcd", model="m")


def test_numpy_embeddings_on_nodes():
    repo = cairn.Repo.in_memory()
    v = np.array([0.25, -0.5, 0.125], dtype=np.float32)
    with repo.transaction("np") as tx:
        tx.put_node(cairn.Node("a", embeddings={"m": v}))
        tx.put_node(cairn.Node("b", embeddings={"m": np.array([1.0, 0.0, 0.0])}))  # float64: per element
        tx.put_node(cairn.Node("c", props={"score": np.float32(0.5), "n": np.int64(3), "xs": np.arange(3)}))
    assert repo.node("a").embeddings == {"m": [0.25, -0.5, 0.125]}
    assert repo.node("b").embeddings == {"m": [1.0, 0.0, 0.0]}
    assert repo.node("c").props == {"score": 0.5, "n": 3, "xs": [0, 1, 2]}
    r = repo.retrieve(vector=v, model="m", limit=1)
    assert r.items[0].id == "a"


def test_threads_get_identical_results(repo):
    spec = json.dumps({"text": "stall boundary", "vector": {"model": "m", "embedding": [0.5, 0.5, 0.0, 0.0]}, "limit": 4})
    expected = repo.retrieve_json(spec)
    queries = [("stall", [1.0, 0.0, 0.0, 0.0]), ("laminar", [0.0, 0.0, 1.0, 0.0]), ("horn", [0.0, 1.0, 0.0, 0.0])]
    singles = {q: repo.retrieve(q, vector=v, model="m", expand=1).json for q, v in queries}

    def work(i):
        if i % 2 == 0:
            return ("spec", repo.retrieve_json(spec))
        q, v = queries[i % 3]
        return (q, repo.retrieve(q, vector=np.array(v, dtype=np.float32), model="m", expand=1).json)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(64)))
    for key, out in results:
        assert out == (expected if key == "spec" else singles[key])


def test_list_mode_and_build_indexes(repo):
    report = repo.build_indexes()
    assert isinstance(report, dict)
    page = repo.retrieve(list=True, labels="Document", limit=2)
    assert [i.id for i in page.items] == ["doc-1", "doc-2"]
    nxt = repo.retrieve(list=True, labels="Document", limit=2, after="doc-2")
    assert [i.id for i in nxt.items] == ["doc-3"]


def test_memory_budget_changes_no_answer(tmp_path):
    """A budget too small for the dense rows keeps them on disk; the answer is the same."""
    spec = json.dumps({"text": "stall boundary", "vector": {"model": "m", "embedding": [0.5, 0.5, 0.0, 0.0]}, "limit": 4})
    a = cairn.Repo.init(str(tmp_path / "a"))
    fill(a)
    expected = a.retrieve_json(spec)
    b = cairn.Repo.init(str(tmp_path / "b"))
    b.set_memory_budget(0)
    assert b.index_stats()["memory_budget"] == 0
    fill(b)
    assert b.retrieve_json(spec) == expected
    assert b.retrieve_json(spec) == expected


def test_an_empty_memory_recalls_nothing_without_error():
    """A new repository's first recall is the normal start of every agent: no items and
    an `empty_repository` warning, not an error (issue 26)."""
    empty = cairn.Repo.in_memory()
    r = empty.retrieve("what do I know about the user", limit=5)
    assert r.commit is None
    assert r.items == []
    assert [w.code for w in r.warnings] == ["empty_repository"]
    assert json.loads(r.json)["commit"] is None
    # Bad settings are still refused on an empty memory.
    with pytest.raises(cairn.RetrieveError):
        empty.retrieve("x", limit=0)
    # A revision other than the head is still an error.
    with pytest.raises(cairn.CairnError):
        empty.retrieve("x", at="HEAD~1")
