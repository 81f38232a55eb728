"""Every error family raises its own class, all under cairn.CairnError."""

import pytest

import cairn


def test_hierarchy():
    for cls in (cairn.NotFound, cairn.InvalidInput, cairn.Conflict, cairn.Corrupt, cairn.StoreError, cairn.RetrieveError):
        assert issubclass(cls, cairn.CairnError)
    assert issubclass(cairn.CairnError, Exception)
    assert cairn.errors.NotFound is cairn.NotFound


def test_not_found(tmp_path, repo):
    with pytest.raises(cairn.NotFound, match="no cairn repository"):
        cairn.Repo.open(tmp_path / "nothing-here")
    with pytest.raises(cairn.NotFound, match="unknown revision"):
        repo.node("doc-1", at="no-such-branch")
    with pytest.raises(cairn.NotFound, match="unknown branch"):
        repo.switch_branch("nope")
    with pytest.raises(cairn.NotFound, match="edge"):
        with repo.transaction("x") as tx:
            tx.delete_edge(("doc-1", "likes", "doc-2"))


def test_invalid_input(repo):
    with pytest.raises(cairn.InvalidInput, match="invalid id"):
        repo.node("x" * 1000)
    with pytest.raises(cairn.InvalidInput):
        with repo.transaction("x") as tx:
            tx.put_node(cairn.Node("a", embeddings={"m": [1.0, 2.0]}))  # the model has 4 dimensions
    with pytest.raises(cairn.InvalidInput, match="valid_from"):
        with repo.transaction("x") as tx:
            tx.put_node({"id": "a", "valid_from": "not a time"})
    with pytest.raises(cairn.InvalidInput, match="direction"):
        repo.edges("doc-1", direction="sideways")
    with pytest.raises(cairn.InvalidInput):
        with repo.transaction("x") as tx:
            tx.put_node(42)
    with pytest.raises(cairn.InvalidInput):
        cairn.parse_time("yesterday-ish")


def test_conflict(tmp_path, repo):
    cairn.Repo.init(tmp_path / "r").close()
    with pytest.raises(cairn.Conflict, match="already exists"):
        cairn.Repo.init(tmp_path / "r")
    with pytest.raises(cairn.Conflict, match="already exists"):
        repo.create_branch("main")
    # Two transactions from the same head: the second commit finds the branch moved.
    t1 = repo.transaction("one")
    t2 = repo.transaction("two")
    t1.put_node(cairn.Node("x"))
    t2.put_node(cairn.Node("y"))
    t1.commit()
    head = repo.head()
    with pytest.raises(cairn.Conflict, match="moved"):
        t2.commit()
    assert repo.head() == head
    assert repo.node("y") is None


def test_store_error_locked(tmp_path):
    path = tmp_path / "r"
    first = cairn.Repo.init(path)
    try:
        with pytest.raises(cairn.StoreError, match="in use"):
            cairn.Repo.open(path)
    finally:
        first.close()
    cairn.Repo.open(path).close()


def test_open_waits_for_the_repository(tmp_path):
    """``Repo.open(path, wait=s)`` waits while the repository is in use (as ``cairn
    --wait``), then raises ``StoreError`` if it stays in use."""
    import threading
    import time

    path = tmp_path / "r"
    first = cairn.Repo.init(path)
    t = time.monotonic()
    with pytest.raises(cairn.StoreError, match="in use"):
        cairn.Repo.open(path, wait=0.2)
    assert time.monotonic() - t >= 0.2
    threading.Timer(0.3, first.close).start()
    second = cairn.Repo.open(path, wait=30)
    second.close()


def test_retrieve_errors(repo):
    with pytest.raises(cairn.RetrieveError, match="malformed"):
        repo.retrieve_json('{"text": "x", "colour": "red"}')
    with pytest.raises(cairn.RetrieveError, match="colour"):
        repo.retrieve("x", colour="red")
    with pytest.raises(cairn.RetrieveError, match="at least one lane"):
        repo.retrieve(labels="Document")
    with pytest.raises(cairn.RetrieveError, match="limit"):
        repo.retrieve("stall", limit=0)
    with pytest.raises(cairn.RetrieveError, match="model"):
        repo.retrieve(vector=[1.0, 0.0, 0.0, 0.0])
    with pytest.raises(cairn.RetrieveError):
        repo.retrieve(vector=[1.0, 0.0], model="m")  # wrong dimension
    with pytest.raises(cairn.RetrieveError):
        repo.retrieve("stall", at="no-such-branch")


def test_corrupt(tmp_path):
    path = tmp_path / "r"
    with cairn.Repo.init(path) as repo:
        with repo.transaction("x") as tx:
            tx.put_node(cairn.Node("a", text="hello world " * 10))
    # Damage one byte of the node's stored record (the segment store checksums records).
    segments = sorted((path / "objects").glob("*.seg"))
    assert segments, "expected the segment store's layout"
    seg = segments[0]
    data = bytearray(seg.read_bytes())
    at = data.find(b"hello world")
    assert at >= 0
    data[at + 3] ^= 0xFF
    seg.write_bytes(bytes(data))
    with cairn.Repo.open(path) as repo:
        with pytest.raises(cairn.Corrupt, match="corrupt"):
            repo.node("a")
