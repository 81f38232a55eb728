"""Transactions: commit on a clean exit, nothing on an exception, validation at once."""

import pytest

import cairn


def test_with_block_commits_on_exit():
    repo = cairn.Repo.in_memory()
    assert repo.head() is None
    with repo.transaction("first") as tx:
        tx.put_node(cairn.Node("a", labels=["Doc"], text="lift"))
        tx.put_node({"id": "b", "text": "drag", "props": {"n": 1, "f": 0.5, "tags": ["x"], "m": {"k": None}}})
        tx.put_edge({"source": "a", "target": "b", "kind": "cites", "weight": 2.5})
        assert len(tx) == 3
        assert repo.head() is None  # nothing visible before the commit
    assert tx.commit_id == repo.head()
    assert not tx.is_open
    b = repo.node("b")
    assert b.text == "drag"
    assert b.props == {"n": 1, "f": 0.5, "tags": ["x"], "m": {"k": None}}
    assert isinstance(b.props["n"], int) and isinstance(b.props["f"], float)
    assert repo.edges("a") == [cairn.Edge("a", "b", "cites", weight=2.5)]
    assert repo.commit().message == "first"


def test_exception_in_block_commits_nothing():
    repo = cairn.Repo.in_memory()
    with pytest.raises(RuntimeError, match="boom"):
        with repo.transaction("never") as tx:
            tx.put_node(cairn.Node("a"))
            raise RuntimeError("boom")
    assert repo.head() is None
    assert repo.node("a") is None
    assert not tx.is_open
    with pytest.raises(cairn.InvalidInput, match="already committed or rolled back"):
        tx.put_node(cairn.Node("b"))


def test_refused_change_leaves_transaction_as_it_was():
    repo = cairn.Repo.in_memory()
    with repo.transaction("one") as tx:
        tx.put_node(cairn.Node("a", embeddings={"m": [1.0, 2.0]}))
        with pytest.raises(cairn.InvalidInput):
            tx.put_node(cairn.Node("b", embeddings={"m": [1.0, 2.0, 3.0]}))  # dimension
        with pytest.raises(cairn.InvalidInput):
            tx.put_edge(cairn.Edge("a", "nowhere", "cites"))  # missing endpoint
        with pytest.raises(cairn.InvalidInput):
            tx.put_node({"id": "c", "colour": "red"})  # unknown field
        with pytest.raises(cairn.InvalidInput):
            tx.put_node(cairn.Node("c", props={"x": float("nan")}))
        assert len(tx) == 1
    assert [n.id for n in repo.nodes()] == ["a"]


def test_explicit_commit_rollback_and_fixed_time():
    repo = cairn.Repo.in_memory()
    tx = repo.transaction(author="me")
    tx.put_node(cairn.Node("a", text="v1"))
    c1 = tx.commit("add a", timestamp_ms=1_000)
    assert repo.commit(c1).author == "me"
    assert repo.commit(c1).timestamp_ms == 1_000

    tx = repo.transaction("dropped")
    tx.put_node(cairn.Node("a", text="v2"))
    tx.rollback()
    assert repo.head() == c1
    assert repo.node("a").text == "v1"

    with pytest.raises(cairn.InvalidInput, match="earlier than its parent"):
        with repo.transaction("back in time", timestamp_ms=999) as tx:
            tx.put_node(cairn.Node("z"))
    assert repo.head() == c1


def test_transaction_reads_its_own_changes_and_patch_invalidate():
    repo = cairn.Repo.in_memory()
    with repo.transaction("base") as tx:
        tx.put_node(cairn.Node("alice", labels=["Person"], text="Alice lives in Paris", props={"city": "Paris"}))
        assert tx.node("alice").text == "Alice lives in Paris"
        assert tx.base is None
    with repo.transaction("moved") as tx:
        tx.patch_node("alice", labels_add=["Employee"], props={"city": "Lyon"}, text="Alice lives in Lyon")
        tx.invalidate("alice", "2030-01-01")
    alice = repo.node("alice")
    assert alice.labels == ["Employee", "Person"]
    assert alice.props == {"city": "Lyon"}
    assert alice.valid_until == cairn.parse_time("2030-01-01")
    with repo.transaction("reopen") as tx:
        tx.patch_node("alice", valid_until=None)
    assert repo.node("alice").valid_until is None


def test_delete_node_and_edge():
    repo = cairn.Repo.in_memory()
    with repo.transaction("two") as tx:
        tx.put_node(cairn.Node("a"))
        tx.put_node(cairn.Node("b"))
        tx.put_edge(cairn.Edge("a", "b", "cites"))
        tx.put_edge(cairn.Edge("b", "a", "cites"))
    with repo.transaction("drop one edge") as tx:
        tx.delete_edge(("b", "cites", "a"))
    assert [e.key for e in repo.edges("a")] == [cairn.EdgeKey("a", "cites", "b")]
    with repo.transaction("drop b") as tx:
        tx.delete_node("b")
    assert repo.edges("a") == []
    with pytest.raises(cairn.NotFound):
        with repo.transaction("again") as tx:
            tx.delete_node("b")


def test_on_disk_reopen(tmp_path):
    path = tmp_path / "memory"
    with cairn.Repo.init(path) as repo:
        with repo.transaction("one") as tx:
            tx.put_node(cairn.Node("a", text="kept"))
    with cairn.Repo.open(path) as repo:
        assert repo.node("a").text == "kept"
        assert repo.path == str(path)
    with pytest.raises(cairn.CairnError, match="closed"):
        repo.head()
