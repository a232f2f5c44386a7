#!/usr/bin/env python
"""
Contextual retrieval benchmark (not a test): what `Contextualizer` contexts do to retrieval quality, and how fast
the LLM mode is.

    # index the corpus with breadcrumb contexts into a /tmp store (a custom indexing YAML written under /tmp)
    .venv/bin/python benchmarks/contextual_bench.py index --store /tmp/ctx/label --heading-style label
    # same dense vectors, other sparse texts: a derived store (contexts + BM25 recomputed, dense vectors copied)
    .venv/bin/python benchmarks/contextual_bench.py derive --source /tmp/ctx/label --store /tmp/ctx/full-sparse \
        --heading-style full
    # article-level quality per mode on the dev sets (several stores side by side)
    .venv/bin/python benchmarks/contextual_bench.py eval --store .bench/final --store /tmp/ctx/label
    # LLM mode: speed on ~30 children and the projection to the whole corpus
    .venv/bin/python benchmarks/contextual_bench.py llm --children 30 --model qwen2.5-coder-0.5b
    # characters per token of the Qwen tokenizer on the corpus (ContextCompressor's estimate)
    .venv/bin/python benchmarks/contextual_bench.py calibrate

The indexing YAML is the canonical `yaml/indexing.yaml` with its `contextualizer` (between `child_splitter` and
`topic_tagger`, off by default) switched on and `context` in the embedders' `meta_fields_to_embed`;
`LEXHAY_YAML_DIR` points the SDK at it (the retrieval YAML is linked, not copied).
"""

import argparse
import logging as std_logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

import yaml  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"
DEV_SETS = ("dev-constitucion.jsonl", "dev-labor-es.jsonl")
MODES = ("sparse", "dense", "hybrid", "full")
CONTEXTUALIZER_TYPE = "components.preprocessors.contextualizer.Contextualizer"
console = Console(width=220)


def indexing_yaml(
    *, mode: str, heading_style: str, sparse_fields: list[str], dense_fields: list[str], include_parents: bool
) -> dict:
    """
    The canonical indexing pipeline with its `contextualizer` (declared there, off by default) switched on in
    `mode`, and the embedders' `meta_fields_to_embed` set.

    :raises ValueError: The canonical YAML has no `contextualizer` between `child_splitter` and `topic_tagger`.
    """
    data = yaml.safe_load((ROOT / "yaml" / "indexing.yaml").read_text(encoding="utf-8"))
    components = data["components"]
    wired = {"sender": "child_splitter.documents", "receiver": "contextualizer.documents"} in data["connections"]
    if components.get("contextualizer", {}).get("type") != CONTEXTUALIZER_TYPE or not wired:
        raise ValueError("yaml/indexing.yaml has no contextualizer after child_splitter to switch on")
    components["contextualizer"]["init_parameters"] = {
        "mode": mode,
        "chat_generator": None,
        "heading_style": heading_style,
        "include_parents": include_parents,
        "cache_path": None,
        "max_context_chars": 300,
        "max_tokens": 80,
        "timeout": None,
        "progress_bar": True,
        "enabled": True,
    }
    components["sparse_embedder"]["init_parameters"]["meta_fields_to_embed"] = sparse_fields
    components["dense_embedder"]["init_parameters"]["meta_fields_to_embed"] = dense_fields
    return data


def yaml_folder(store: Path, pipeline: dict) -> Path:
    """A folder beside the store holding the custom indexing YAML and links to the canonical other YAMLs."""
    folder = Path(f"{store}-yaml")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "indexing.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False, allow_unicode=True))
    for name in ("retrieval.yaml", "query.yaml"):
        link = folder / name
        if not link.exists():
            link.symlink_to(ROOT / "yaml" / name)
    return folder


def cmd_index(args: argparse.Namespace) -> None:
    store = Path(args.store)
    pipeline = indexing_yaml(
        mode=args.mode,
        heading_style=args.heading_style,
        sparse_fields=args.sparse_fields.split(","),
        dense_fields=args.dense_fields.split(","),
        include_parents=not args.children_only,
    )
    os.environ["LEXHAY_YAML_DIR"] = str(yaml_folder(store, pipeline))
    from pipelines.sdk import LexHay  # noqa: PLC0415

    with LexHay(store_path=str(store), embedder=args.embedder) as lex:
        report = lex.index([args.corpus])
        console.print(
            f"indexed {report.files} files: {report.parents} parents + {report.children} children in "
            f"{report.seconds:.0f} s ({len(report.errors)} errors) into {store}"
        )


def cmd_derive(args: argparse.Namespace) -> None:
    """A store with the source's dense vectors and recomputed contexts + BM25 vectors (no dense re-embedding)."""
    from components.preprocessors.contextualizer import Contextualizer  # noqa: PLC0415
    from components.document_stores.edge_document_store import EdgeDocumentStore  # noqa: PLC0415
    from components.embedders.sparse_embedder import SparseDocumentEmbedder  # noqa: PLC0415

    source = EdgeDocumentStore(path=args.source, return_embedding=True)
    docs = source.filter_documents()
    source.close()
    for doc in docs:
        doc.meta.pop("context", None)
    spec = yaml.safe_load((ROOT / "yaml" / "indexing.yaml").read_text(encoding="utf-8"))
    sparse_params = dict(spec["components"]["sparse_embedder"]["init_parameters"])
    sparse_params["meta_fields_to_embed"] = args.sparse_fields.split(",")
    started = time.perf_counter()
    if args.mode != "none":
        contextualizer = Contextualizer(
            mode="breadcrumb", heading_style=args.heading_style, include_parents=not args.children_only
        )
        docs = contextualizer.run(documents=docs)["documents"]
    docs = SparseDocumentEmbedder(**sparse_params).run(documents=docs)["documents"]
    target = EdgeDocumentStore(path=args.store)
    target.write_documents(docs)
    target.close()
    console.print(f"derived {len(docs)} chunks into {args.store} in {time.perf_counter() - started:.0f} s")


def cmd_eval(args: argparse.Namespace) -> None:
    from pipelines.evaluation import evaluate_mode, load_labelled, percentile  # noqa: PLC0415
    from pipelines.sdk import LexHay  # noqa: PLC0415

    datasets = {name.removeprefix("dev-").removesuffix(".jsonl"): load_labelled(EVAL_DIR / name) for name in DEV_SETS}
    table = Table(title="Article-level retrieval quality per store and mode (dev sets)")
    table.add_column("store")
    table.add_column("mode")
    for name in datasets:
        for metric in ("hit@1", "hit@10", "nDCG@5", "MRR@10"):
            table.add_column(f"{name} {metric}", justify="right")
    table.add_column("p50 ms", justify="right")
    for store in args.store:
        with LexHay(store_path=store, embedder=args.embedder) as lex:
            lex.retrieve("warm up", top_k=10)
            for mode in args.modes.split(","):
                scores, lat = evaluate_mode(lambda q, m=mode: lex.retrieve_articles(q, top_k=10, mode=m), datasets)
                cells = [f"{scores[n][m]:.3f}" for n in datasets for m in ("hit@1", "hit@10", "nDCG@5", "MRR@10")]
                table.add_row(store, mode, *cells, f"{percentile(lat, 50):.0f}")
                console.print(f"{store} {mode}: " + " ".join(cells))
    console.print(table)


def _children(law_file: str, count: int, corpus: Path):
    """`count` children (with their parents) of the labour statutes, spread over the file's articles."""
    from components.preprocessors.article_parser import ArticleParser  # noqa: PLC0415
    from components.preprocessors.child_splitter import ChildSplitter  # noqa: PLC0415
    from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter  # noqa: PLC0415
    from components.converters.statute_converter import StatuteConverter  # noqa: PLC0415

    docs = StatuteConverter().run(sources=[str(corpus / law_file)])["documents"]
    articles = ArticleParser().run(documents=docs)["documents"]
    parents = SemanticParentSplitter(breakpoint_model="lexical").run(documents=articles)["documents"]
    chunks = ChildSplitter().run(documents=parents)["documents"]
    by_parent: dict[str, list] = {}
    for doc in chunks:
        if doc.meta["level"] == "child":
            by_parent.setdefault(doc.meta["parent_id"], []).append(doc)
    parent_docs = {d.id: d for d in chunks if d.meta["level"] == "parent"}
    picked = []
    step = max(1, len(by_parent) // max(1, count // 3))
    for parent_id in list(by_parent)[::step]:
        picked.append(parent_docs[parent_id])
        picked.extend(by_parent[parent_id][:3])
        if sum(d.meta["level"] == "child" for d in picked) >= count:
            break
    return picked, sum(1 for d in chunks if d.meta["level"] == "child")


def cmd_llm(args: argparse.Namespace) -> None:
    """Speed of the LLM mode on a few children of the ET (the parent prefix is reused between siblings)."""
    from components.preprocessors.contextualizer import Contextualizer  # noqa: PLC0415
    from components.generators.llm_backends import LocalLlamaChatGenerator  # noqa: PLC0415

    std_logging.basicConfig(level=std_logging.INFO, format="%(message)s")
    docs, total_in_law = _children(args.law_file, args.children, Path(args.corpus))
    children = sum(d.meta["level"] == "child" for d in docs)
    llm = LocalLlamaChatGenerator(model=args.model, n_ctx=4096, n_threads=args.threads, timeout=args.timeout)
    t0 = time.perf_counter()
    llm.warm_up()
    load_s = time.perf_counter() - t0
    cache = Path(args.cache)
    if cache.exists() and args.fresh:
        cache.unlink()
    contextualizer = Contextualizer(mode="llm", chat_generator=llm, cache_path=str(cache), timeout=args.timeout)
    console.print(f"pending: {contextualizer.pending(docs)}")
    started = time.perf_counter()
    result = contextualizer.run(documents=docs)
    seconds = time.perf_counter() - started
    stats = result["stats"]
    per_chunk = seconds / max(1, stats["llm_generated"] + stats["llm_fallbacks"])
    console.print(stats)
    console.print(
        f"model {args.model}: load {load_s:.1f} s; {children} children in {seconds:.1f} s = {per_chunk:.2f} s/chunk"
    )
    again = time.perf_counter()
    cached = Contextualizer(mode="llm", chat_generator=llm, cache_path=str(cache)).run(documents=docs)["stats"]
    console.print(f"re-run from the cache: {cached} in {time.perf_counter() - again:.2f} s")
    corpus_children = args.corpus_children
    console.print(
        f"projection: {corpus_children} children of the corpus x {per_chunk:.2f} s = "
        f"{corpus_children * per_chunk / 3600:.1f} h ({args.law_file}: {total_in_law} children, "
        f"{total_in_law * per_chunk / 3600:.1f} h)"
    )
    for doc in result["documents"]:
        if doc.meta["level"] == "child":
            console.print(f"- {doc.meta['context']}\n    [{(doc.content or '')[:110]}...]")
    timings = _timings(llm, docs)
    if timings:
        console.print(f"llama.cpp timings of one call: {timings}")


def _timings(llm, docs):
    """llama.cpp's own prompt / generation speeds for one uncached call."""
    from haystack.dataclasses import ChatMessage  # noqa: PLC0415

    from components.preprocessors.contextualizer import CONTEXT_SYSTEM_PROMPT, CONTEXT_USER_TEMPLATE, breadcrumb  # noqa: PLC0415

    parent = next(d for d in docs if d.meta["level"] == "parent")
    child = next(d for d in docs if d.meta.get("parent_id") == parent.id)
    prompt = CONTEXT_USER_TEMPLATE.format(
        heading=breadcrumb(parent, "full"), parent=parent.content, child=child.content
    )
    reply = llm.run(
        messages=[ChatMessage.from_system(CONTEXT_SYSTEM_PROMPT), ChatMessage.from_user(prompt + " ")],
        generation_kwargs={"max_tokens": 80},
    )["replies"][0]
    timings = reply.meta.get("timings") or {}
    usage = reply.meta.get("usage") or {}
    keys = ("prompt_n", "prompt_per_second", "predicted_n", "predicted_per_second")
    return {**{k: round(timings[k], 1) for k in keys if k in timings}, "usage": usage}


def cmd_calibrate(args: argparse.Namespace) -> None:
    """Characters per token of the local Qwen tokenizer on the corpus articles (the compressor's estimate)."""
    from components.preprocessors.article_parser import ArticleParser  # noqa: PLC0415
    from components.builders.context_compressor import LlamaTokenizerCounter  # noqa: PLC0415
    from components.utils.chunking import CHARS_PER_TOKEN  # noqa: PLC0415
    from components.converters.statute_converter import StatuteConverter  # noqa: PLC0415

    counter = LlamaTokenizerCounter(args.model)
    docs = StatuteConverter().run(sources=sorted(str(p) for p in Path(args.corpus).glob("*.md")))["documents"]
    totals: dict[str, list[int]] = {}
    ratios = []
    for article in ArticleParser().run(documents=docs)["documents"]:
        text = article.content or ""
        if len(text) < 100:
            continue
        tokens = counter(text)
        lang = article.meta.get("lang", "es")
        totals.setdefault(lang, [0, 0])
        totals[lang][0] += len(text)
        totals[lang][1] += tokens
        ratios.append(len(text) / tokens)
    ratios.sort()
    for lang, (chars, tokens) in totals.items():
        console.print(f"{lang}: {chars} chars / {tokens} tokens = {chars / tokens:.2f} chars per token "
                      f"(estimate uses {CHARS_PER_TOKEN.get(lang)})")
    console.print(f"per article: p5 {ratios[len(ratios) // 20]:.2f}, median {ratios[len(ratios) // 2]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("index", "derive"):
        p = sub.add_parser(name)
        p.add_argument("--store", required=True)
        p.add_argument("--mode", default="breadcrumb", choices=("none", "breadcrumb"))
        p.add_argument("--heading-style", default="label", choices=("label", "full"))
        p.add_argument("--sparse-fields", default="context", help="comma-separated meta_fields_to_embed")
        p.add_argument("--children-only", action="store_true", help="no context on parent blocks")
        if name == "index":
            p.add_argument("--dense-fields", default="context", help="comma-separated meta_fields_to_embed")
            p.add_argument("--corpus", default=str(ROOT / "data" / "corpus"))
            p.add_argument("--embedder", default=None)
        else:
            p.add_argument("--source", required=True, help="store whose chunks and dense vectors are reused")
    p = sub.add_parser("eval")
    p.add_argument("--store", action="append", required=True)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--embedder", default=None)
    p = sub.add_parser("llm")
    p.add_argument("--children", type=int, default=30)
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--law-file", default="BOE-A-2015-11430.md")
    p.add_argument("--corpus", default=str(ROOT / "data" / "corpus"))
    p.add_argument("--corpus-children", type=int, default=17183)
    p.add_argument("--cache", default="/tmp/ctx/llm-contexts.jsonl")
    p.add_argument("--fresh", action="store_true", help="start from an empty cache")
    p = sub.add_parser("calibrate")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--corpus", default=str(ROOT / "data" / "corpus"))
    args = parser.parse_args()
    commands = {"index": cmd_index, "derive": cmd_derive, "eval": cmd_eval, "llm": cmd_llm, "calibrate": cmd_calibrate}
    commands[args.command](args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging_level = os.environ.get("LOGLEVEL")
    if logging_level:
        std_logging.basicConfig(level=logging_level)
    sys.exit(main())
