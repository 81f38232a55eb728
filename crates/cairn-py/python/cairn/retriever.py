"""A retriever with the shape agent frameworks expect: ``invoke(query) -> list[Document]``.

``Document`` is a tiny local dataclass with ``page_content`` and ``metadata``; no agent
framework is needed. If ``langchain_core`` is installed, :meth:`Document.as_langchain`
converts to its ``Document``, :meth:`CairnRetriever.as_langchain` wraps the retriever
as a LangChain ``BaseRetriever``, and ``retriever | step`` builds a LangChain chain
directly (it is never a dependency).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .repo import Repo
from .retrieval import RetrievalResult, RetrievedItem

__all__ = ["Document", "CairnRetriever"]


@dataclass
class Document:
    """A retrieved piece of context: ``page_content`` (the item's rendered text) and
    ``metadata`` (id, rank, score, lanes, labels, props, validity, source path, commit)."""

    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_langchain(self) -> Any:
        """This document as a ``langchain_core.documents.Document`` (ImportError if
        ``langchain_core`` is not installed)."""
        from langchain_core.documents import Document as LcDocument

        return LcDocument(page_content=self.page_content, metadata=dict(self.metadata))

    @classmethod
    def from_item(cls, item: RetrievedItem, commit: str | None) -> "Document":
        """The document for one retrieved item."""
        return cls(
            page_content=item.text,
            metadata={
                "id": item.id,
                "rank": item.rank,
                "score": item.score,
                "lanes": {k: {"rank": v.rank, "score": v.score} for k, v in item.lanes.items()},
                "labels": list(item.labels),
                "props": dict(item.props),
                "valid_from_ms": item.valid_from_ms,
                "valid_until_ms": item.valid_until_ms,
                "source_path": item.source_path,
                "tokens": item.tokens,
                "commit": commit,
            },
        )


class CairnRetriever:
    """Retrieves from a :class:`~cairn.Repo` with fixed settings.

    ``defaults`` are :meth:`cairn.Repo.retrieve` keywords applied to every query (e.g.
    ``labels="Document"``, ``limit=5``, ``expand=1``, ``token_budget=2000``).
    ``embed`` — a function from the query text to its vector — adds a dense lane of
    ``model`` (give both, or neither)::

        retriever = CairnRetriever(repo, labels="Document", limit=5)
        docs = retriever.invoke("how do wings stall")
    """

    def __init__(
        self,
        repo: Repo,
        *,
        embed: Callable[[str], Sequence[float] | Any] | None = None,
        model: str | None = None,
        **defaults: Any,
    ) -> None:
        if (embed is None) != (model is None):
            from ._native import InvalidInput

            raise InvalidInput("CairnRetriever: `embed` and `model` go together (a dense lane needs both)")
        self.repo = repo
        self.embed = embed
        self.model = model
        self.defaults = defaults

    def retrieve(self, query: str, **overrides: Any) -> RetrievalResult:
        """The full :class:`~cairn.RetrievalResult` for ``query`` (``overrides`` replace
        defaults for this call)."""
        kwargs = {**self.defaults, **overrides}
        if self.embed is not None and "vector" not in kwargs:
            kwargs["vector"] = self.embed(query)
            kwargs["model"] = self.model
        return self.repo.retrieve(query, **kwargs)

    def invoke(self, query: str, **overrides: Any) -> list[Document]:
        """The documents for ``query``, best first."""
        result = self.retrieve(query, **overrides)
        return [Document.from_item(i, result.commit) for i in result.items]

    __call__ = invoke

    def batch(self, queries: Sequence[str], **overrides: Any) -> list[list[Document]]:
        """The documents for each of ``queries``, in order."""
        return [self.invoke(q, **overrides) for q in queries]

    def __or__(self, other: Any) -> Any:
        """``retriever | step``: a LangChain chain, as ``retriever.as_langchain() | step``
        (ImportError, saying what to install, without ``langchain_core``)."""
        return self.as_langchain() | other

    def __ror__(self, other: Any) -> Any:
        """``step | retriever``: a LangChain chain, as ``step | retriever.as_langchain()``."""
        return other | self.as_langchain()

    def as_langchain(self) -> Any:
        """This retriever as a ``langchain_core`` ``BaseRetriever``: a LangChain Runnable
        (``invoke``, ``batch``, ``ainvoke``, ``|``) returning LangChain documents
        (ImportError, saying what to install, if ``langchain_core`` is not installed)."""
        try:
            from langchain_core.retrievers import BaseRetriever
        except ImportError as e:
            raise ImportError(
                "CairnRetriever in a LangChain chain needs langchain-core: pip install langchain-core"
            ) from e

        outer = self

        class _CairnLangChainRetriever(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Any]:
                return [d.as_langchain() for d in outer.invoke(query)]

        return _CairnLangChainRetriever()
