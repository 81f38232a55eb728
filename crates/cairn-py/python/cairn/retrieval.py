"""Retrieval results as dataclasses with the fields of the JSON result, and the mapping
from :meth:`cairn.Repo.retrieve`'s keyword arguments to a JSON retrieval spec.

The JSON the native layer returns is kept on the result (:attr:`RetrievalResult.json`):
it is byte for byte what ``cairn retrieve --json`` prints for the same spec and commit.
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .graph import time_ms
from ._native import InvalidInput, parse_time

__all__ = ["LaneScore", "LaneReport", "Warning", "RetrievedItem", "RetrievalResult", "build_spec"]


@dataclass(frozen=True)
class LaneScore:
    """An item's place in one lane: 1-based ``rank`` and the lane's raw ``score``."""

    rank: int
    score: float


@dataclass(frozen=True)
class LaneReport:
    """What one lane (``text``, ``dense:<model>``, ``sparse:<model>``) returned."""

    name: str
    hits: int
    approximate: bool
    embedded: bool = False
    """True if the lane's query vector was embedded from the query text."""


@dataclass(frozen=True)
class Warning:
    """A typed warning: ``code`` (snake_case, e.g. ``lane_empty``) and a message."""

    code: str
    message: str


@dataclass(frozen=True)
class RetrievedItem:
    """One packed item, best first. ``text`` is the rendered text to put in a model's
    context; ``node_text`` the node's whole text; the node's own fields follow."""

    id: str
    rank: int
    score: float
    rerank_score: float | None
    lanes: dict[str, LaneScore]
    source_path: list[str] | None
    text: str
    tokens: int
    labels: list[str]
    props: dict[str, Any]
    node_text: str
    valid_from_ms: int | None
    valid_until_ms: int | None
    explain: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RetrievedItem":
        """An item from its JSON object."""
        return cls(
            id=d["id"],
            rank=d["rank"],
            score=d["score"],
            rerank_score=d.get("rerank_score"),
            lanes={k: LaneScore(**v) for k, v in d["lanes"].items()},
            source_path=d.get("source_path"),
            text=d["text"],
            tokens=d["tokens"],
            labels=list(d["labels"]),
            props=dict(d["props"]),
            node_text=d["node_text"],
            valid_from_ms=d.get("valid_from_ms"),
            valid_until_ms=d.get("valid_until_ms"),
            explain=d.get("explain"),
        )


@dataclass(frozen=True)
class RetrievalResult:
    """The result of one retrieval: the commit read (``None`` when the current branch has
    no commits yet: the answer is then empty, with an ``empty_repository`` warning), the
    validity time applied (ms; ``None`` for all time), the items, token accounting,
    candidates seen, lane reports and warnings. Same commit + same spec ⇒ the same
    result, byte for byte."""

    commit: str | None
    valid_at: int | None
    items: list[RetrievedItem]
    tokens_used: int
    token_budget: int | None
    dropped: int
    candidates_seen: int
    lanes: list[LaneReport]
    warnings: list[Warning]
    json: str = field(default="", repr=False, compare=False)
    """The result's JSON, exactly as ``cairn retrieve --json`` prints it."""

    @property
    def tokens_budget(self) -> int | None:
        """The earlier name of ``token_budget``, still readable."""
        return self.token_budget

    @classmethod
    def from_json(cls, text: str) -> "RetrievalResult":
        """A result from its JSON text."""
        d = _json.loads(text)
        return cls(
            commit=d["commit"],
            valid_at=d["valid_at"],
            items=[RetrievedItem.from_dict(i) for i in d["items"]],
            tokens_used=d["tokens_used"],
            # Results written before the rename name it `tokens_budget`.
            token_budget=d["token_budget"] if "token_budget" in d else d["tokens_budget"],
            dropped=d["dropped"],
            candidates_seen=d["candidates_seen"],
            lanes=[LaneReport(**l) for l in d["lanes"]],
            warnings=[Warning(**w) for w in d["warnings"]],
            json=text,
        )

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _where(where: Any) -> list[dict[str, Any]]:
    if isinstance(where, Mapping):
        return [{"key": k, "op": "eq", "value": v} for k, v in where.items()]
    if isinstance(where, Sequence) and not isinstance(where, (str, bytes)):
        return [dict(c) for c in where]
    raise InvalidInput(
        "where: expected a dict {key: value} (each an `eq` clause) or a list of JSON clauses "
        '({"key": ..., "op": "eq"|"in"|"range"|"exists", ...})'
    )


def _valid_at(valid_at: Any) -> Any:
    if valid_at == "all_time":
        return "all_time"
    t = time_ms(valid_at)
    if isinstance(t, str):
        return parse_time(t)
    return t


def _expand(expand: Any) -> dict[str, Any]:
    if expand is True:
        return {}
    if isinstance(expand, int) and not isinstance(expand, bool):
        return {"hops": expand}
    if isinstance(expand, Mapping):
        return dict(expand)
    raise InvalidInput("expand: expected True, a number of hops, or a dict of GraphExpand settings")


def _fusion(fusion: Any) -> dict[str, Any]:
    if isinstance(fusion, str):
        return {"method": fusion}
    if isinstance(fusion, Mapping):
        return dict(fusion)
    raise InvalidInput('fusion: expected a method name ("rrf", "weighted_rrf", "score"...) or a dict')


def build_spec(
    *,
    text: str | None = None,
    labels: str | Sequence[str] | None = None,
    any_labels: Sequence[str] | None = None,
    where: Any = None,
    valid_at: Any = None,
    at: str | None = None,
    expand: Any = None,
    fusion: Any = None,
    token_budget: int | None = None,
    limit: int | None = None,
    sparse: Mapping[str, Any] | None = None,
    text_cap: int | None = None,
    depth: int | None = None,
    render_props: Sequence[str] | None = None,
    rerank_top_n: int | None = None,
    ann: bool | None = None,
    list: bool = False,
    after: str | None = None,
    explain: bool = False,
    embed: bool | None = None,
    embedder: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON retrieval spec (as a dict) that :meth:`cairn.Repo.retrieve`'s keyword
    arguments describe. The query vector is not part of it (it goes to the native layer
    as a buffer). See :meth:`cairn.Repo.retrieve` for each argument; any other keyword
    is copied into the spec as is (the spec parser refuses unknown fields with
    :class:`~cairn.RetrieveError`)."""
    spec: dict[str, Any] = {}
    if text is not None:
        spec["text"] = text
    if sparse is not None:
        spec["sparse"] = dict(sparse)
    if labels is not None:
        spec["labels_all"] = [labels] if isinstance(labels, str) else [*labels]
    if any_labels is not None:
        spec["labels_any"] = [any_labels] if isinstance(any_labels, str) else [*any_labels]
    if where is not None:
        spec["where"] = _where(where)
    if valid_at is not None:
        spec["valid_at"] = _valid_at(valid_at)
    if at is not None:
        spec["at"] = at
    if expand is not None and expand is not False:
        spec["expand"] = _expand(expand)
    if fusion is not None:
        spec["fusion"] = _fusion(fusion)
    for key, value in (
        ("token_budget", token_budget),
        ("limit", limit),
        ("text_cap", text_cap),
        ("depth", depth),
        ("rerank_top_n", rerank_top_n),
        ("ann", ann),
        ("after", after),
        ("embed", embed),
        ("embedder", embedder),
    ):
        if value is not None:
            spec[key] = value
    if render_props is not None:
        spec["render_props"] = [*render_props]
    if list:
        spec["list"] = True
    if explain:
        spec["explain"] = True
    for key, value in extra.items():
        if value is not None:
            spec[key] = value
    return spec
