"""Nodes and edges as plain dataclasses, with the field names of the JSON import format.

A node or edge given to a transaction may be one of these dataclasses or a plain ``dict``
with the same keys (exactly the object of an ``{"node": ...}`` / ``{"edge": ...}`` line of
``cairn import``). Dense vectors (``embeddings``) may be lists of floats or NumPy arrays;
a ``float32`` array is read straight from its buffer.

Times (``valid_from``, ``valid_until``) are integer milliseconds since the epoch; on input
they may also be an RFC 3339 string, a date (``"2024-06-01"``) or a ``datetime`` (naive
ones are read as UTC, as the import format reads a time without an offset).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

from ._native import InvalidInput

__all__ = ["Node", "Edge", "EdgeKey", "SparseVector", "time_ms"]


def time_ms(value: Any) -> Any:
    """A time argument in a form the native layer reads: ``None``, ``int`` ms and ``str``
    pass through; a ``datetime`` becomes ms since the epoch (naive: UTC); a ``date``
    becomes its midnight UTC."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return delta // _dt.timedelta(milliseconds=1)
    if isinstance(value, _dt.date):
        return time_ms(_dt.datetime(value.year, value.month, value.day))
    return value


class EdgeKey(NamedTuple):
    """What identifies an edge: ``(source, kind, target)``."""

    source: str
    kind: str
    target: str


@dataclass
class SparseVector:
    """A sparse vector: strictly increasing ``indices`` and one finite weight each."""

    indices: list[int]
    values: list[float]

    def to_dict(self) -> dict[str, Any]:
        """The import format's ``{"indices": [...], "values": [...]}``."""
        return {"indices": self.indices, "values": self.values}


@dataclass
class Node:
    """A node: an id (1..=256 bytes of UTF-8), labels, text, properties (JSON values),
    dense vectors by model, sparse vectors by model, and a validity interval
    ``[valid_from, valid_until)`` in ms (``None``: open)."""

    id: str
    labels: list[str] = field(default_factory=list)
    text: str = ""
    props: dict[str, Any] = field(default_factory=dict)
    embeddings: dict[str, Any] = field(default_factory=dict)
    sparse: dict[str, SparseVector] = field(default_factory=dict)
    valid_from: Any = None
    valid_until: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The node as an import-format object (fields at their default left out;
        vectors left as given, so a NumPy array is not copied here)."""
        d: dict[str, Any] = {"id": self.id}
        if self.labels:
            d["labels"] = list(self.labels)
        if self.text:
            d["text"] = self.text
        if self.props:
            d["props"] = self.props
        if self.embeddings:
            d["embeddings"] = dict(self.embeddings)
        if self.sparse:
            d["sparse"] = {
                m: (s.to_dict() if isinstance(s, SparseVector) else s) for m, s in self.sparse.items()
            }
        if self.valid_from is not None:
            d["valid_from"] = time_ms(self.valid_from)
        if self.valid_until is not None:
            d["valid_until"] = time_ms(self.valid_until)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Node":
        """A node from an import-format object (what ``cairn export`` writes)."""
        return cls(
            id=d["id"],
            labels=list(d.get("labels", [])),
            text=d.get("text", ""),
            props=dict(d.get("props", {})),
            embeddings={m: list(v) for m, v in d.get("embeddings", {}).items()},
            sparse={
                m: SparseVector(list(s["indices"]), list(s["values"])) for m, s in d.get("sparse", {}).items()
            },
            valid_from=d.get("valid_from"),
            valid_until=d.get("valid_until"),
        )


@dataclass
class Edge:
    """A directed edge ``source -[kind]-> target`` with a weight (default 1.0),
    properties and a validity interval in ms."""

    source: str
    target: str
    kind: str
    weight: float = 1.0
    props: dict[str, Any] = field(default_factory=dict)
    valid_from: Any = None
    valid_until: Any = None

    @property
    def key(self) -> EdgeKey:
        """``(source, kind, target)``."""
        return EdgeKey(self.source, self.kind, self.target)

    def to_dict(self) -> dict[str, Any]:
        """The edge as an import-format object (fields at their default left out)."""
        d: dict[str, Any] = {"source": self.source, "target": self.target, "kind": self.kind}
        if self.weight != 1.0:
            d["weight"] = self.weight
        if self.props:
            d["props"] = self.props
        if self.valid_from is not None:
            d["valid_from"] = time_ms(self.valid_from)
        if self.valid_until is not None:
            d["valid_until"] = time_ms(self.valid_until)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Edge":
        """An edge from an import-format object."""
        return cls(
            source=d["source"],
            target=d["target"],
            kind=d["kind"],
            weight=d.get("weight", 1.0),
            props=dict(d.get("props", {})),
            valid_from=d.get("valid_from"),
            valid_until=d.get("valid_until"),
        )


def node_dict(node: "Node | Mapping[str, Any]") -> dict[str, Any]:
    """A node argument (dataclass or dict) as the dict the native layer reads."""
    if isinstance(node, Node):
        return node.to_dict()
    if isinstance(node, Mapping):
        return _times(dict(node))
    raise InvalidInput(f"node: expected a cairn.Node or a dict, got {type(node).__name__}")


def edge_dict(edge: "Edge | Mapping[str, Any]") -> dict[str, Any]:
    """An edge argument (dataclass or dict) as the dict the native layer reads."""
    if isinstance(edge, Edge):
        return edge.to_dict()
    if isinstance(edge, Mapping):
        return _times(dict(edge))
    raise InvalidInput(f"edge: expected a cairn.Edge or a dict, got {type(edge).__name__}")


def _times(d: dict[str, Any]) -> dict[str, Any]:
    for k in ("valid_from", "valid_until"):
        if k in d and d[k] is not None:
            d[k] = time_ms(d[k])
    return d


def edge_key(key: "EdgeKey | Edge | Sequence[str]") -> EdgeKey:
    """An edge key from an :class:`EdgeKey`, an :class:`Edge` or a 3-sequence."""
    if isinstance(key, Edge):
        return key.key
    source, kind, target = key
    return EdgeKey(source, kind, target)
