"""Cairn: an embedded, versioned graph database with a deterministic hybrid retriever for
AI agents — Python bindings.

    import cairn

    repo = cairn.Repo.in_memory()
    with repo.transaction("import") as tx:
        tx.put_node(cairn.Node("doc-1", labels=["Document"], text="how wings stall"))
    result = repo.retrieve("wings stall", labels="Document", limit=5)
    print(result.items[0].id)

See :class:`Repo`, :class:`Transaction`, :class:`Node`, :class:`Edge`,
:class:`RetrievalResult`, :mod:`cairn.errors` and :mod:`cairn.retriever`.
"""

from ._native import __version__, parse_time
from .errors import CairnError, Conflict, Corrupt, InvalidInput, NotFound, RetrieveError, StoreError
from .graph import Edge, EdgeKey, Node, SparseVector
from .history import Commit, Diff, EdgeChange, FieldChange, HistoryEntry, MergeConflict, MergeResult, NodeChange
from .repo import Repo, Transaction
from .retrieval import LaneReport, LaneScore, RetrievalResult, RetrievedItem, Warning

__all__ = [
    "__version__",
    "parse_time",
    "Repo",
    "Transaction",
    "Node",
    "Edge",
    "EdgeKey",
    "SparseVector",
    "Commit",
    "Diff",
    "FieldChange",
    "NodeChange",
    "EdgeChange",
    "HistoryEntry",
    "MergeConflict",
    "MergeResult",
    "RetrievalResult",
    "RetrievedItem",
    "LaneScore",
    "LaneReport",
    "Warning",
    "CairnError",
    "NotFound",
    "InvalidInput",
    "Conflict",
    "Corrupt",
    "StoreError",
    "RetrieveError",
]
