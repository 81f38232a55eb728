"""The repository handle and its transactions.

Every method maps one call of the Rust library (``cairn::Repo``); graph data comes back
as :class:`~cairn.Node` / :class:`~cairn.Edge` dataclasses, history as the dataclasses of
:mod:`cairn.history`, retrievals as :class:`~cairn.RetrievalResult`. Errors are the
classes of :mod:`cairn.errors`. A ``Repo`` may be shared by threads: commits,
retrievals, index builds, imports and merges release the GIL.
"""

from __future__ import annotations

import json as _json
import os
from typing import Any, Mapping, Sequence

from . import _native
from .graph import Edge, EdgeKey, Node, edge_dict, edge_key, node_dict, time_ms
from .history import Commit, Diff, HistoryEntry, MergeResult
from .retrieval import RetrievalResult, build_spec
from ._native import InvalidInput

__all__ = ["Repo", "Transaction"]

_UNSET: Any = object()


class Transaction:
    """A set of changes to one branch, committed as one commit.

    Use it as a context manager: the block's changes are committed on a normal exit
    (with the message given to :meth:`Repo.transaction`) and discarded if the block
    raises::

        with repo.transaction("import two docs") as tx:
            tx.put_node(cairn.Node("a", labels=["Doc"], text="lift"))
            tx.put_node({"id": "b", "text": "drag"})
            tx.put_edge(cairn.Edge("a", "b", "cites"))
        print(tx.commit_id)

    Each change is validated when it is made (a refused one raises
    :class:`~cairn.InvalidInput` and leaves the transaction as it was). The commit moves
    the branch by compare-and-swap from the head the transaction started at: if another
    writer moved it first, :class:`~cairn.Conflict` is raised and nothing is changed.
    """

    def __init__(self, native: Any, message: str | None, timestamp_ms: int | None) -> None:
        self._native = native
        self.message = message
        """The commit message used when the ``with`` block ends."""
        self.timestamp_ms = timestamp_ms
        """The commit time (ms) to use; ``None``: now (never before the parent's)."""
        self.commit_id: str | None = None
        """The commit made, once committed."""

    def put_node(self, node: Node | Mapping[str, Any]) -> None:
        """Adds or replaces a node (a :class:`~cairn.Node` or an import-format dict)."""
        self._native.put_node(node_dict(node))

    def put_edge(self, edge: Edge | Mapping[str, Any]) -> None:
        """Adds or replaces an edge; both endpoints must exist (in the base commit or put
        earlier in this transaction)."""
        self._native.put_edge(edge_dict(edge))

    def delete_node(self, id: str) -> None:
        """Deletes a node and its incident edges (:class:`~cairn.NotFound` if absent)."""
        self._native.delete_node(id)

    def delete_edge(self, key: EdgeKey | Edge | Sequence[str]) -> None:
        """Deletes the edge ``(source, kind, target)`` (:class:`~cairn.NotFound` if absent)."""
        k = edge_key(key)
        self._native.delete_edge(k.source, k.kind, k.target)

    def invalidate(self, id: str, valid_until: Any) -> None:
        """Ends node ``id``'s validity at ``valid_until`` (ms, a time string or a
        ``datetime``); the node stays for as-of and "valid at" reads."""
        self._native.invalidate(id, time_ms(valid_until))

    def invalidate_edge(self, key: EdgeKey | Edge | Sequence[str], valid_until: Any) -> None:
        """Ends an edge's validity at ``valid_until``."""
        k = edge_key(key)
        self._native.invalidate_edge(k.source, k.kind, k.target, time_ms(valid_until))

    def patch_node(
        self,
        id: str,
        *,
        labels_add: Sequence[str] = (),
        labels_remove: Sequence[str] = (),
        props: Mapping[str, Any] | None = None,
        props_remove: Sequence[str] = (),
        text: str | None = None,
        embeddings: Mapping[str, Any] | None = None,
        valid_from: Any = _UNSET,
        valid_until: Any = _UNSET,
    ) -> None:
        """Changes part of node ``id``: what is named changes, everything else stays
        (removals before additions; ``props`` are set; ``valid_from``/``valid_until``
        ``None`` opens that end). A changed ``text`` keeps the vectors unless
        ``embeddings`` replaces them."""
        patch: dict[str, Any] = {"id": id}
        if labels_add:
            patch["labels_add"] = [*labels_add]
        if labels_remove:
            patch["labels_remove"] = [*labels_remove]
        if props:
            patch["props"] = dict(props)
        if props_remove:
            patch["props_remove"] = [*props_remove]
        if text is not None:
            patch["text"] = text
        if embeddings:
            patch["embeddings"] = dict(embeddings)
        if valid_from is not _UNSET:
            patch["valid_from"] = time_ms(valid_from)
        if valid_until is not _UNSET:
            patch["valid_until"] = time_ms(valid_until)
        self._native.patch_node(patch)

    def node(self, id: str) -> Node | None:
        """Node ``id`` as this transaction sees it (its changes over the base)."""
        j = self._native.node_json(id)
        return None if j is None else Node.from_dict(_json.loads(j))

    @property
    def base(self) -> str | None:
        """The commit this transaction is based on (``None`` on an empty branch)."""
        return self._native.base()

    @property
    def is_open(self) -> bool:
        """True until committed or rolled back."""
        return self._native.is_open

    def __len__(self) -> int:
        return len(self._native)

    def commit(self, message: str | None = None, *, timestamp_ms: int | None = None) -> str:
        """Commits every change as one commit (without the GIL) and returns its id.
        ``message`` defaults to the one given to :meth:`Repo.transaction`."""
        message = message if message is not None else self.message
        if message is None:
            raise InvalidInput("a commit needs a message: repo.transaction('...') or tx.commit('...')")
        ts = timestamp_ms if timestamp_ms is not None else self.timestamp_ms
        self.commit_id = self._native.commit(message, ts)
        return self.commit_id

    def rollback(self) -> None:
        """Discards every change (harmless once finished)."""
        self._native.rollback()

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.rollback()
            return
        if self.is_open:
            self.commit()


class Repo:
    """A Cairn repository: a versioned property graph with a hybrid retriever.

    ``Repo.init(path)`` creates one on disk, ``Repo.open(path)`` opens it,
    ``Repo.in_memory()`` makes a scratch one. A repository on disk is used by one process
    at a time; :meth:`close` (or a ``with`` block) releases it.
    """

    def __init__(self, native: Any) -> None:
        self._native = native

    @classmethod
    def init(cls, path: str | os.PathLike[str]) -> "Repo":
        """Creates a repository at ``path`` (:class:`~cairn.Conflict` if one is there)."""
        return cls(_native.Repo.init(os.fspath(path)))

    @classmethod
    def open(cls, path: str | os.PathLike[str], wait: float = 0.0) -> "Repo":
        """Opens the repository at ``path`` (:class:`~cairn.NotFound` if there is none).
        While another process has it open, waits up to ``wait`` seconds for it (as
        ``cairn --wait``) before raising :class:`~cairn.StoreError`."""
        return cls(_native.Repo.open(os.fspath(path), wait))

    @classmethod
    def in_memory(cls) -> "Repo":
        """A new repository held in memory."""
        return cls(_native.Repo.in_memory())

    def close(self) -> None:
        """Releases the repository (the store closes once open transactions are gone)."""
        self._native.close()

    def __enter__(self) -> "Repo":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._native)

    @property
    def path(self) -> str | None:
        """The repository's directory (``None`` in memory)."""
        return self._native.path

    # Writing -------------------------------------------------------------------------

    def transaction(
        self,
        message: str | None = None,
        *,
        branch: str | None = None,
        author: str | None = None,
        timestamp_ms: int | None = None,
    ) -> Transaction:
        """Starts a :class:`Transaction` on ``branch`` (default: the current branch),
        based on its head now; a branch that does not exist raises :class:`NotFound`
        (make it with :meth:`create_branch`). ``message`` is the commit message used when a
        ``with`` block ends; ``author`` defaults to ``cairn``; ``timestamp_ms`` fixes the commit
        time (for reproducible commit ids)."""
        return Transaction(self._native.transaction(branch, author), message, timestamp_ms)

    def import_jsonl(self, text: str, message: str) -> dict[str, Any]:
        """Imports JSON Lines in the import format as one commit; returns the summary
        ``{"commit", "head", "operations"}``. Nothing is committed if a line is bad, nor
        if the import changes nothing (``commit`` is then ``None`` and ``head`` the
        unchanged head)."""
        return _json.loads(self._native.import_jsonl(text, message))

    def export_jsonl(self, rev: str = "HEAD") -> str:
        """Revision ``rev`` as JSON Lines in the import format."""
        return self._native.export_jsonl(rev)

    # Reading -------------------------------------------------------------------------

    def head(self) -> str | None:
        """The current branch's head commit (``None`` before the first commit)."""
        return self._native.head()

    def resolve(self, rev: str) -> str:
        """A revision (hex id or prefix, branch, ``HEAD``, ``REV~N``, ``BRANCH@{T}``) as
        a commit id."""
        return self._native.resolve(rev)

    def commit(self, rev: str = "HEAD") -> Commit:
        """The commit ``rev``."""
        return Commit.from_dict(_json.loads(self._native.commit_json(rev)))

    def node(self, id: str, at: str | None = None) -> Node | None:
        """Node ``id`` at revision ``at`` (default: the head), or ``None``."""
        j = self._native.node_json(id, at)
        return None if j is None else Node.from_dict(_json.loads(j))

    def nodes(self, at: str | None = None, label: str | None = None) -> list[Node]:
        """Every node at revision ``at`` in id order (only those with ``label``)."""
        return [Node.from_dict(d) for d in _json.loads(self._native.nodes_json(at, label))]

    def edges(self, id: str, at: str | None = None, direction: str = "both") -> list[Edge]:
        """The edges of node ``id`` at revision ``at``: ``direction`` ``"out"``,
        ``"in"`` or ``"both"`` (outgoing first)."""
        return [Edge.from_dict(d) for d in _json.loads(self._native.edges_json(id, at, direction))]

    def log(self, rev: str | None = None, limit: int | None = None) -> list[Commit]:
        """Commits reachable from ``rev`` (default: the head), newest first."""
        return [Commit.from_dict(d) for d in _json.loads(self._native.log_json(rev, limit))]

    def diff(self, a: str, b: str | None = None) -> Diff:
        """What changed from revision ``a`` to revision ``b``, field by field (``cairn
        diff A B --json``); without ``b``, from ``a``'s first parent to ``a``. A root
        commit alone raises :class:`InvalidInput`."""
        return Diff.from_dict(_json.loads(self._native.diff_json(a, b)))

    def history(self, id: str, rev: str | None = None, limit: int | None = None) -> list[HistoryEntry]:
        """The commits that added, changed or removed node ``id`` among the ancestors of
        ``rev`` (default: the current branch's head), newest first, across merges."""
        return [HistoryEntry.from_dict(d) for d in _json.loads(self._native.history_json(id, rev, limit))]

    def stats(self, rev: str | None = None) -> dict[str, Any]:
        """Counts of revision ``rev`` (default: the head)."""
        return _json.loads(self._native.stats_json(rev))

    # Branches and tags ---------------------------------------------------------------

    @property
    def current_branch(self) -> str:
        """The current branch."""
        return self._native.current_branch()

    def branches(self) -> dict[str, str]:
        """Branch name → head commit, in name order."""
        return dict(self._native.branches())

    def create_branch(self, name: str, at: str | None = None) -> str:
        """Creates branch ``name`` at ``at`` (default: the head); returns its head."""
        return self._native.create_branch(name, at)

    def switch_branch(self, name: str) -> None:
        """Makes ``name`` the current branch."""
        self._native.switch_branch(name)

    def delete_branch(self, name: str) -> None:
        """Deletes branch ``name`` (not the current one)."""
        self._native.delete_branch(name)

    def tags(self) -> dict[str, str]:
        """Tag name → commit, in name order."""
        return dict(self._native.tags())

    def create_tag(self, name: str, at: str | None = None) -> str:
        """Creates tag ``name`` at ``at`` (default: the head); tags never move."""
        return self._native.create_tag(name, at)

    def delete_tag(self, name: str) -> None:
        """Deletes tag ``name``."""
        self._native.delete_tag(name)

    # Remotes -------------------------------------------------------------------------

    @classmethod
    def clone_from(cls, url: str | os.PathLike[str], dir: str | os.PathLike[str]) -> "Repo":
        """Clones the repository at ``url`` (a path) into ``dir`` (which must not exist):
        remote ``origin``, every branch fetched, the remote's current branch checked out."""
        return cls(_native.Repo.clone_from(os.fspath(url), os.fspath(dir)))

    def remotes(self) -> dict[str, str]:
        """Remote name → URL, in name order."""
        return dict(self._native.remotes())

    def remote_add(self, name: str, url: str | os.PathLike[str]) -> None:
        """Adds remote ``name`` at ``url`` (a repository path; :class:`~cairn.Conflict`
        if the name is taken)."""
        self._native.remote_add(name, os.fspath(url))

    def remote_remove(self, name: str) -> None:
        """Removes remote ``name`` and its remote-tracking branches."""
        self._native.remote_remove(name)

    def fetch(self, remote: str = "origin") -> dict[str, Any]:
        """Copies what the remote's branches reach into remote-tracking branches
        (revisions ``origin/main``); returns ``{"remote", "updates", "objects", "bytes",
        "commits"}``. Local branches do not move."""
        return _json.loads(self._native.fetch_json(remote))

    def push(self, remote: str = "origin", branch: str | None = None, *, force: bool = False) -> dict[str, Any]:
        """Pushes ``branch`` (default: the current one): fast-forward only, else
        :class:`~cairn.Conflict` naming the remote's head (fetch and merge first), unless
        ``force``. Returns ``{"remote", "branch", "old", "new", "objects", "bytes", "commits"}``."""
        return _json.loads(self._native.push_json(remote, branch, force))

    def pull(self, remote: str = "origin", branch: str | None = None, message: str | None = None) -> str:
        """Fetches, then merges ``remote/branch`` into the current branch and commits a
        fast-forward or a clean merge; conflicts commit nothing and raise
        :class:`~cairn.Conflict` (settle them with :meth:`merge`). Returns the new head."""
        return self._native.pull(remote, branch, message)

    def merge(
        self,
        theirs: str,
        *,
        into: str | None = None,
        strategy: str = "manual",
        resolutions: Mapping[Any, Any] | None = None,
        message: str | None = None,
        author: str | None = None,
        timestamp_ms: int | None = None,
    ) -> MergeResult:
        """Merges revision ``theirs`` into branch ``into`` (default: the current branch)
        and commits. ``strategy`` (``"manual"``, ``"ours"``, ``"theirs"``) settles every
        conflict; ``resolutions`` maps a node id or an edge ``(source, kind, target)`` to
        ``"ours"``, ``"theirs"``, ``"base"``, ``None`` (delete) or a new node/edge.
        Raises :class:`~cairn.Conflict`, changing nothing, while a conflict is
        unresolved (see :meth:`merge_preview`)."""
        return self._merge(theirs, into, strategy, resolutions, message, True, author, timestamp_ms)

    def merge_preview(
        self,
        theirs: str,
        *,
        into: str | None = None,
        strategy: str = "manual",
        resolutions: Mapping[Any, Any] | None = None,
    ) -> MergeResult:
        """Computes the merge :meth:`merge` would make, with its conflicts, and changes
        nothing."""
        return self._merge(theirs, into, strategy, resolutions, None, False, None, None)

    def _merge(self, theirs, into, strategy, resolutions, message, commit, author, timestamp_ms) -> MergeResult:
        res = None
        if resolutions is not None:
            res = {}
            for k, v in resolutions.items():
                key = tuple(edge_key(k)) if not isinstance(k, str) else k
                if isinstance(v, Node):
                    v = node_dict(v)
                elif isinstance(v, Edge):
                    v = edge_dict(v)
                res[key] = v
        j = self._native.merge_json(theirs, into, strategy, res, message, commit, author, timestamp_ms)
        return MergeResult.from_dict(_json.loads(j))

    # Retrieval -----------------------------------------------------------------------

    def retrieve(
        self,
        text: str | None = None,
        *,
        vector: Any = None,
        model: str | None = None,
        labels: str | Sequence[str] | None = None,
        any_labels: Sequence[str] | None = None,
        where: Any = None,
        valid_at: Any = None,
        at: str | None = None,
        expand: Any = None,
        fusion: Any = None,
        token_budget: int | None = None,
        limit: int | None = None,
        **more: Any,
    ) -> RetrievalResult:
        """Runs a hybrid retrieval and returns a :class:`~cairn.RetrievalResult`.

        - ``text``: BM25 lane; ``vector`` + ``model``: dense lane (a list of floats or a
          NumPy array; ``float32`` is read from its buffer);
          ``sparse={"model", "indices", "values"}``: sparse lane.
        - ``labels``: every one required; ``any_labels``: at least one.
        - ``where``: ``{key: value}`` (each an equality), or a list of JSON clauses
          (``{"key": "year", "op": "range", "min": 2000}``; ops ``eq``, ``in``,
          ``range``, ``exists``).
        - ``valid_at``: ms, a time string, a ``datetime``, or ``"all_time"``
          (default: the commit's time); ``at``: the revision to read (default: the head).
        - ``expand``: ``True``, a number of hops, or a dict of graph expansion settings
          (``hops``, ``max_nodes``, ``direction``, ``kinds``...).
        - ``fusion``: a method name (``"rrf"``, ``"weighted_rrf"``, ``"score"``...) or a
          dict (``{"method": ..., "k": ..., "weights": {...}}``).
        - ``token_budget``, ``limit``, and the other spec fields as keywords:
          ``text_cap``, ``depth``, ``render_props``, ``rerank_top_n``, ``ann``, ``list``,
          ``after``, ``explain``; any other spec field is passed as given.
        - ``embed``: ``False`` never embeds ``text`` into a dense lane. By default, when
          no ``vector`` is given, the repository's query embedder (``cairn embedder
          set``; the first, in name order, whose model has vectors) embeds ``text``, as
          ``cairn retrieve --text``, the server and MCP do; ``embedder`` names another.

        Runs without the GIL. Raises :class:`~cairn.RetrieveError` if the retrieval
        cannot run. The result's ``json`` is what ``cairn retrieve --json`` prints for
        the same spec (see :meth:`retrieve_json`).
        """
        spec = build_spec(
            text=text,
            labels=labels,
            any_labels=any_labels,
            where=where,
            valid_at=valid_at,
            at=at,
            expand=expand,
            fusion=fusion,
            token_budget=token_budget,
            limit=limit,
            **more,
        )
        return RetrievalResult.from_json(self._native.retrieve_spec(spec, vector, model))

    def retrieve_json(self, spec_json: str) -> str:
        """Runs a JSON retrieval spec (the ``cairn retrieve --spec`` form) and returns the
        result's JSON, byte for byte what ``cairn retrieve --spec ... --json`` prints
        (less its final newline)."""
        return self._native.retrieve_json(spec_json)

    def set_memory_budget(self, bytes: int) -> None:
        """Sets the memory budget of the index data in bytes (default 1 GiB): the index
        part cache, and a quarter of it for each dense model's exact rows, beyond which
        they are read from the store as needed. Results are the same under every budget."""
        self._native.set_memory_budget(bytes)

    def index_stats(self) -> dict[str, Any]:
        """The index cache's bytes, the memory budget, and what this handle has stored."""
        return _json.loads(self._native.index_stats_json())

    def build_indexes(self, rev: str = "HEAD", graphs: bool = False) -> dict[str, Any]:
        """Builds and stores revision ``rev``'s index chunks (and with ``graphs`` the HNSW
        unit graphs for ``ann``) ahead of queries, without the GIL; returns the report."""
        return _json.loads(self._native.build_indexes_json(rev, graphs))
