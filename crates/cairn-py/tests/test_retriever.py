"""The agent-framework adapter: invoke(query) -> list[Document]."""

import importlib.util

import pytest

import cairn
from cairn.retriever import CairnRetriever, Document


def test_invoke_returns_documents(repo):
    retriever = CairnRetriever(repo, labels="Document", limit=2)
    docs = retriever.invoke("boundary layers stall")
    assert len(docs) == 2
    assert all(isinstance(d, Document) for d in docs)
    assert docs[0].metadata["id"] == "doc-2"
    assert docs[0].metadata["rank"] == 1
    assert docs[0].metadata["commit"] == repo.head()
    assert "boundary layers" in docs[0].page_content
    assert retriever("boundary layers stall") == docs
    # Overrides replace the defaults for one call.
    assert len(retriever.invoke("boundary layers stall", limit=1)) == 1


def test_embedder_adds_a_dense_lane(repo):
    table = {"wing": [1.0, 0.0, 0.0, 0.0]}
    retriever = CairnRetriever(repo, embed=lambda q: table[q], model="m", limit=3)
    result = retriever.retrieve("wing")
    assert [l.name for l in result.lanes] == ["dense:m", "text"]
    assert retriever.invoke("wing")[0].metadata["id"] == "doc-1"
    with pytest.raises(cairn.InvalidInput):
        CairnRetriever(repo, embed=lambda q: [0.0])


@pytest.mark.skipif(importlib.util.find_spec("langchain_core") is None, reason="langchain_core not installed")
def test_langchain_conversion(repo):
    doc = CairnRetriever(repo, limit=1).invoke("stall")[0]
    lc = doc.as_langchain()
    assert lc.page_content == doc.page_content
    assert lc.metadata["id"] == doc.metadata["id"]


@pytest.mark.skipif(importlib.util.find_spec("langchain_core") is None, reason="langchain_core not installed")
def test_langchain_pipe_and_runnable(repo):
    """README's LangChain path: the retriever pipes into a chain as it is, and its
    LangChain form is a Runnable (invoke, batch, ainvoke)."""
    import asyncio

    retriever = CairnRetriever(repo, labels="Document", limit=2)
    chain = retriever | (lambda docs: [d.metadata["id"] for d in docs])
    assert chain.invoke("stall") == [d.metadata["id"] for d in retriever.invoke("stall")]
    lc = retriever.as_langchain()
    queries = ["stall", "wings"]
    assert [len(b) for b in lc.batch(queries)] == [len(retriever.invoke(q)) for q in queries]
    assert asyncio.run(lc.ainvoke("stall"))[0].metadata["id"] == retriever.invoke("stall")[0].metadata["id"]


def test_batch_without_langchain(repo):
    retriever = CairnRetriever(repo, limit=1)
    assert retriever.batch(["stall", "wings"]) == [retriever.invoke("stall"), retriever.invoke("wings")]
