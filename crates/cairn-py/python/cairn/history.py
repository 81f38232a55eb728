"""History as dataclasses: commits (``log``), diffs, a node's history, merge reports.
Commit ids are 64-digit hex strings; times are ms since the epoch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .graph import Edge, EdgeKey, Node

__all__ = ["Commit", "FieldChange", "NodeChange", "EdgeChange", "Diff", "HistoryEntry", "MergeConflict", "MergeResult"]


@dataclass(frozen=True)
class Commit:
    """One commit, as ``cairn log --json`` shows it."""

    commit: str
    parents: list[str]
    timestamp_ms: int
    author: str
    message: str
    node_count: int
    edge_count: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Commit":
        """A commit from its JSON object."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class FieldChange:
    """One field of a changed node or edge, as ``cairn diff`` prints it: ``field`` is
    ``text``, ``labels``, ``valid_from``, ``valid_until``, ``props.NAME``, ``embeddings.MODEL``,
    ``sparse.MODEL`` (nodes) or ``weight``, ``props.NAME``, ... (edges); ``before`` and
    ``after`` are the values as compact JSON text (``null``: absent; validity ends as
    RFC 3339 strings in UTC; vectors summarised)."""

    field: str
    before: str
    after: str


@dataclass(frozen=True)
class NodeChange:
    """A node that differs between two commits: ``kind`` is ``added``, ``removed`` or
    ``changed``; ``before``/``after`` are its object hashes (``None``: absent);
    ``fields`` the fields that changed (empty unless ``changed``)."""

    id: str
    kind: str
    before: str | None
    after: str | None
    fields: list[FieldChange]


@dataclass(frozen=True)
class EdgeChange:
    """An edge that differs between two commits (see :class:`NodeChange`)."""

    key: EdgeKey
    kind: str
    before: str | None
    after: str | None
    fields: list[FieldChange]


@dataclass(frozen=True)
class Diff:
    """What changed from commit ``from_commit`` to ``to_commit``, in key order."""

    from_commit: str
    to_commit: str
    nodes: list[NodeChange]
    edges: list[EdgeChange]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Diff":
        """A diff from its JSON object."""
        return cls(
            from_commit=d["from"],
            to_commit=d["to"],
            nodes=[
                NodeChange(
                    id=n["id"],
                    kind=n["kind"],
                    before=n["before"],
                    after=n["after"],
                    fields=[FieldChange(**f) for f in n["fields"]],
                )
                for n in d["nodes"]
            ],
            edges=[
                EdgeChange(
                    key=EdgeKey(e["key"]["source"], e["key"]["kind"], e["key"]["target"]),
                    kind=e["kind"],
                    before=e["before"],
                    after=e["after"],
                    fields=[FieldChange(**f) for f in e["fields"]],
                )
                for e in d["edges"]
            ],
        )


@dataclass(frozen=True)
class HistoryEntry:
    """One commit that added, changed or removed a node (``change``), with the node's
    object hash after (``hash``) and before (``previous``) it."""

    commit: str
    timestamp_ms: int
    change: str
    hash: str | None
    previous: str | None
    message: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HistoryEntry":
        """An entry from its JSON object."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class MergeConflict:
    """A node (``type == "node"``, ``id``) or edge (``type == "edge"``, ``key``) both
    sides changed differently, with its three versions (``None``: absent on that side)
    and whether a strategy or resolution settled it."""

    type: str
    id: str | None
    key: EdgeKey | None
    base: Node | Edge | None
    ours: Node | Edge | None
    theirs: Node | Edge | None
    resolved: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MergeConflict":
        """A conflict from its JSON object."""
        make = Node.from_dict if d["type"] == "node" else Edge.from_dict
        side = lambda v: None if v is None else make(v)  # noqa: E731
        key = EdgeKey(d["source"], d["kind"], d["target"]) if d["type"] == "edge" else None
        return cls(
            type=d["type"],
            id=d.get("id"),
            key=key,
            base=side(d.get("base")),
            ours=side(d.get("ours")),
            theirs=side(d.get("theirs")),
            resolved=d["resolved"],
        )


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`cairn.Repo.merge` did or would do: ``kind`` (``up_to_date``,
    ``fast_forward``, ``three_way``), the branch, the heads, the merge base, the
    conflicts, the edges dropped because the merge deletes an endpoint, and the branch's
    new head (``commit``; ``None`` for a preview)."""

    kind: str
    branch: str
    ours: str | None
    theirs: str
    base: str | None
    conflicts: list[MergeConflict]
    dropped_edges: list[EdgeKey]
    commit: str | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MergeResult":
        """A merge report from its JSON object."""
        return cls(
            kind=d["kind"],
            branch=d["branch"],
            ours=d["ours"],
            theirs=d["theirs"],
            base=d["base"],
            conflicts=[MergeConflict.from_dict(c) for c in d["conflicts"]],
            dropped_edges=[EdgeKey(k["source"], k["kind"], k["target"]) for k in d["dropped_edges"]],
            commit=d["commit"],
        )
