"""Reads at any revision, log, diff, node history, branches, tags, merges."""

import pytest

import cairn
from conftest import T0


def test_reads_at_any_revision(repo):
    c1 = repo.head()
    with repo.transaction("edit", timestamp_ms=T0 + 1) as tx:
        tx.put_node(cairn.Node("doc-1", labels=["Document"], text="rewritten"))
        tx.delete_node("doc-3")
    c2 = repo.head()
    assert repo.node("doc-1", at=c1).text.startswith("how wings stall")
    assert repo.node("doc-1").text == "rewritten"
    assert repo.node("doc-3", at=c1) is not None
    assert repo.node("doc-3") is None
    assert repo.node("doc-3", at="HEAD~1").id == "doc-3"
    assert [e.key for e in repo.edges("doc-2", at=c1)] == [
        cairn.EdgeKey("doc-2", "cites", "doc-3"),
        cairn.EdgeKey("doc-1", "cites", "doc-2"),
    ]
    assert [e.key for e in repo.edges("doc-2", direction="out")] == []
    assert [e.key for e in repo.edges("doc-2", direction="in")] == [cairn.EdgeKey("doc-1", "cites", "doc-2")]
    assert [n.id for n in repo.nodes(at=c1, label="Document")] == ["doc-1", "doc-2", "doc-3"]
    assert repo.resolve(c1[:8]) == c1

    log = repo.log()
    assert [c.commit for c in log] == [c2, c1]
    assert log[0].parents == [c1] and log[0].message == "edit" and log[0].timestamp_ms == T0 + 1
    assert log[1].author == "tests"
    assert [c.commit for c in repo.log(limit=1)] == [c2]

    diff = repo.diff(c1, c2)
    assert (diff.from_commit, diff.to_commit) == (c1, c2)
    assert [(n.id, n.kind) for n in diff.nodes] == [("doc-1", "changed"), ("doc-3", "removed")]
    assert [(e.key, e.kind) for e in diff.edges] == [(cairn.EdgeKey("doc-2", "cites", "doc-3"), "removed")]
    # Field by field, as `cairn diff --json`: the rewritten text; nothing for a removal.
    text = [f for f in diff.nodes[0].fields if f.field == "text"]
    assert len(text) == 1 and "rewritten" in text[0].after and "how wings stall" in text[0].before
    assert diff.nodes[1].fields == []
    # One revision alone: against its first parent; a root commit has none.
    assert repo.diff("HEAD") == diff
    with pytest.raises(cairn.InvalidInput, match="root commit"):
        repo.diff(c1)

    hist = repo.history("doc-1")
    assert [(h.commit, h.change, h.message) for h in hist] == [(c2, "changed", "edit"), (c1, "added", "corpus")]
    assert len(repo.history("doc-1", limit=1)) == 1
    assert repo.history("doc-1", rev=c1)[0].change == "added"
    assert repo.stats()["nodes"] == 3


def test_branches_tags_and_merge(repo):
    base = repo.head()
    assert repo.current_branch == "main"
    repo.create_branch("feature")
    assert repo.branches() == {"feature": base, "main": base}
    # A misspelt branch is refused: it must not start a new, unrelated history.
    with pytest.raises(cairn.NotFound, match="featrue"):
        with repo.transaction("typo", branch="featrue") as tx:
            tx.put_node(cairn.Node("lost"))
    assert repo.branches() == {"feature": base, "main": base}
    with repo.transaction("theirs", branch="feature", timestamp_ms=T0 + 1) as tx:
        tx.put_node(cairn.Node("doc-1", text="theirs"))
        tx.put_node(cairn.Node("new", text="from feature"))
    with repo.transaction("ours", timestamp_ms=T0 + 2) as tx:
        tx.put_node(cairn.Node("doc-1", text="ours"))
    ours_head = repo.head()

    preview = repo.merge_preview("feature")
    assert preview.kind == "three_way" and preview.commit is None
    assert [(c.type, c.id, c.resolved) for c in preview.conflicts] == [("node", "doc-1", False)]
    assert preview.conflicts[0].ours.text == "ours" and preview.conflicts[0].theirs.text == "theirs"
    assert preview.base == base

    with pytest.raises(cairn.Conflict, match="node doc-1"):
        repo.merge("feature")
    assert repo.head() == ours_head  # nothing changed

    merged = repo.merge("feature", resolutions={"doc-1": cairn.Node("doc-1", text="both")}, timestamp_ms=T0 + 3)
    assert merged.commit == repo.head()
    assert repo.commit().parents == [ours_head, repo.branches()["feature"]]
    assert repo.node("doc-1").text == "both"
    assert repo.node("new").text == "from feature"
    assert repo.merge("feature").kind == "up_to_date"

    repo.create_tag("v1")
    assert repo.tags() == {"v1": repo.head()}
    with pytest.raises(cairn.Conflict):
        repo.create_tag("v1")
    repo.switch_branch("feature")
    assert repo.current_branch == "feature"
    assert repo.node("doc-1").text == "theirs"
    with pytest.raises(cairn.InvalidInput, match="current branch"):
        repo.delete_branch("feature")
    repo.switch_branch("main")
    repo.delete_branch("feature")
    assert list(repo.branches()) == ["main"]


def test_merge_strategy_theirs(repo):
    repo.create_branch("f")
    with repo.transaction("t", branch="f", timestamp_ms=T0 + 1) as tx:
        tx.put_node(cairn.Node("doc-1", text="theirs"))
    with repo.transaction("o", timestamp_ms=T0 + 2) as tx:
        tx.put_node(cairn.Node("doc-1", text="ours"))
    r = repo.merge("f", strategy="theirs", message="take theirs", timestamp_ms=T0 + 3)
    assert r.conflicts[0].resolved
    assert repo.node("doc-1").text == "theirs"
    assert repo.commit().message == "take theirs"


def test_import_export_roundtrip(repo):
    text = repo.export_jsonl()
    other = cairn.Repo.in_memory()
    summary = other.import_jsonl(text, "copy")
    assert summary["commit"] == other.head() == summary["head"]
    # The same lines again change nothing: no commit, the head stays.
    again = other.import_jsonl(text, "again")
    assert again["commit"] is None and again["head"] == other.head() == summary["commit"]
    assert other.export_jsonl() == text
    assert other.nodes() == repo.nodes()
