"""Remotes over paths: clone, fetch, push, pull, and a refused push."""

import pytest

import cairn
from conftest import T0


def test_clone_push_pull(tmp_path):
    up = cairn.Repo.init(tmp_path / "up")
    with up.transaction("first", timestamp_ms=T0) as tx:
        tx.put_node(cairn.Node("a", text="alpha"))
    head = up.head()
    up.close()

    a = cairn.Repo.clone_from(tmp_path / "up", tmp_path / "a")
    b = cairn.Repo.clone_from(tmp_path / "up", tmp_path / "b")
    assert a.head() == head
    assert a.resolve("origin/main") == head
    assert list(a.remotes()) == ["origin"]

    with a.transaction("from a", timestamp_ms=T0 + 1) as tx:
        tx.put_node(cairn.Node("from-a", text="on a"))
    pushed = a.push()
    assert pushed["new"] == a.head() and pushed["objects"] > 0

    with b.transaction("from b", timestamp_ms=T0 + 2) as tx:
        tx.put_node(cairn.Node("from-b", text="on b"))
    with pytest.raises(cairn.Conflict, match="fetch and merge first"):
        b.push()
    fetched = b.fetch()
    assert fetched["updates"][0]["new"] == a.head()
    merged = b.pull()
    assert b.head() == merged
    assert b.node("from-a").text == "on a"
    assert b.push()["new"] == merged

    with pytest.raises(cairn.NotFound):
        b.fetch("nowhere")
    with pytest.raises(cairn.InvalidInput):
        b.remote_add("ftp", "ftp://host/repo")
