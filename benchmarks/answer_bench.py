#!/usr/bin/env python
r"""
Query-understanding and answer-loop benchmark (not a test), on the labelled dev question sets.

1. Retrieval quality per configuration, driving the query pipeline's own components (`yaml/query.yaml` loaded by
   `LexHay.pipeline("query")`): the plain question (full mode: multi-query hybrid retrieval + legal re-ranking, one
   query) vs +DecomposeQuery (its queries) vs +HyDE (its passage on the dense side) vs +both, per LLM backend:
   `none` (the deterministic paths: the question as written, which is also what a first question gets by default
   with any LLM; the retrieval chain's `TermExpander` gives BM25 its statutory terms) and the local GGUF models (DecomposeQuery with
   `llm_on_first_question`: the LLM's keyword queries after the deterministic one). The stage outputs of
   each question are computed once per backend and shared by the configurations; a configuration's latency is
   the sum of the stages it runs (LLM stage(s) + retrieval), as the pipeline runs them one after the other.
2. The answer loop (`LexHay.ask`) with one local LLM on a subset: latency p50 / p95, LLM calls per question
   (every chat generator of the pipeline is counted, nested ones included), LLM errors, fallbacks, how often the
   answer cites a labelled article, CRAG routes and retries, NEED retries, answer prompt size.

The LLM stages get their generator the way the loader gives it (`pipelines.loader.apply_settings`): every
component spec whose `chat_generator` init parameter is null in the YAML gets `default_chat_generator()` with
`LEXHAY_LLM=<model>` (timeout `LEXHAY_LLM_TIMEOUT`, default 60 s). The embedded store can be opened by one
process only: benchmark a copy (`cp -r .bench/final /tmp/store`).

    .venv/bin/python benchmarks/answer_bench.py --store /tmp/store \
        --backends none,local-0.5b --llm-limit labor-es=30,constitucion=10 --answer-sets labor-es=10,constitucion=5
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()
os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "components.*,pipelines.*")

import yaml  # noqa: E402
from rich import box  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

try:  # the process-wide query-embedding cache: cleared before each timed request (every question is new)
    from components.embedders.dense_embedder import query_embedding_cache
except ImportError:  # an engine without the cache
    query_embedding_cache = None
from components.generators.llm_backends import LLM_ENV, LocalLlamaChatGenerator, default_chat_generator  # noqa: E402
from components.utils.hardware import cpu_summary  # noqa: E402
from pipelines.evaluation import article_ranking, load_labelled, percentile, score_rankings  # noqa: E402
from pipelines.loader import pipeline_path  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"
DEFAULT_SETS = [str(EVAL_DIR / "dev-constitucion.jsonl"), str(EVAL_DIR / "dev-labor-es.jsonl")]
BACKENDS = {"none": None, "local-0.5b": "qwen2.5-coder-0.5b", "local-1.5b": "qwen2.5-coder-1.5b"}
CONFIGS = {  # name -> (uses DecomposeQuery, uses HyDE)
    "plain": (False, False),
    "+decompose": (True, False),
    "+hyde": (False, True),
    "+both": (True, True),
}
METRICS = ("hit@1", "hit@10", "nDCG@5", "MRR@10")
console = Console(width=240)


# --------------------------------------------------------------------------------------------------- LLM plumbing
class CallLog:
    """Every chat-generator call of the pipeline: stage, seconds, error, prompt size and token usage."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def mark(self) -> int:
        return len(self.calls)

    def since(self, mark: int) -> list[dict[str, Any]]:
        return self.calls[mark:]

    def wrap(self, generator: Any, stage: str) -> Any:
        """Count `generator.run` calls as `stage` (the instance's `run` is replaced; the class is kept, so
        `chat_json` still gives a `LocalLlamaChatGenerator` its JSON grammar)."""
        original = generator.run

        def run(*args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages", args[0] if args else [])
            record: dict[str, Any] = {"stage": stage, "prompt_chars": sum(len(m.text or "") for m in messages)}
            started = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            except Exception as error:
                record.update(seconds=time.perf_counter() - started, error=f"{type(error).__name__}: {error}"[:300])
                self.calls.append(record)
                raise
            reply = (result.get("replies") or [None])[0]
            meta = getattr(reply, "meta", {}) or {}
            usage = meta.get("usage") or {}
            record.update(
                seconds=time.perf_counter() - started,
                error=None,
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                finish_reason=meta.get("finish_reason"),
                prompt_tps=(meta.get("timings") or {}).get("prompt_per_second"),
                generation_tps=(meta.get("timings") or {}).get("predicted_per_second"),
            )
            self.calls.append(record)
            return result

        generator.run = run
        return generator


def llm_stage_paths(pipeline_file: Path) -> list[tuple[str, ...]]:
    """Component paths (nested ones as attribute chains) whose YAML `chat_generator` is null: the stages the
    loader gives the deployment's LLM."""
    data = yaml.safe_load(pipeline_file.read_text(encoding="utf-8"))
    paths: list[tuple[str, ...]] = []

    def visit(path: tuple[str, ...], spec: dict[str, Any]) -> None:
        params = spec.get("init_parameters")
        if not isinstance(params, dict):
            return
        if "chat_generator" in params and params["chat_generator"] is None:
            paths.append(path)
        for key, value in params.items():
            if isinstance(value, dict) and "type" in value:
                visit((*path, key), value)

    for name, spec in data.get("components", {}).items():
        visit((name,), spec)
    return paths


def resolve(pipe: Any, path: tuple[str, ...]) -> Any:
    obj = pipe.get_component(path[0])
    for attr in path[1:]:
        obj = getattr(obj, attr)
    return obj


def all_generator_holders(pipe: Any) -> list[tuple[str, Any]]:
    """Every component (nested ones too) holding a non-None `chat_generator`, with its dotted path."""
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def visit(path: str, obj: Any) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if getattr(obj, "chat_generator", None) is not None:
            found.append((path, obj))
        for key, value in vars(obj).items():
            if value is not obj and hasattr(value, "__haystack_input__"):
                visit(f"{path}.{key}", value)

    for name, instance in pipe.walk():
        visit(name, instance)
    return found


def local_generator(model: str) -> Any:
    """The product's generator for `LEXHAY_LLM=<model>` (`default_chat_generator`), not warmed up."""
    previous = os.environ.get(LLM_ENV)
    os.environ[LLM_ENV] = model
    try:
        generator = default_chat_generator()
    finally:
        if previous is None:
            os.environ.pop(LLM_ENV, None)
        else:
            os.environ[LLM_ENV] = previous
    if not isinstance(generator, LocalLlamaChatGenerator):
        raise SystemExit(
            f"LEXHAY_LLM={model} did not give the local model ({type(generator).__name__}): unset "
            "LEXHAY_LLM_BASE_URL / OPENAI_API_KEY and install the model (`make models-llm`)."
        )
    return generator


def use_backend(pipe: Any, stage_paths: list[tuple[str, ...]], backend: str, log: CallLog) -> dict[str, str]:
    """Give every LLM stage a fresh generator of `backend` (None for `none`), counted in `log` by stage path.
    Generators set explicitly in the YAML are kept and counted too. Returns stage path -> generator model."""
    model = BACKENDS[backend]
    for path in stage_paths:
        holder = resolve(pipe, path)
        holder.chat_generator = None if model is None else local_generator(model)
    used = {}
    for path, holder in all_generator_holders(pipe):
        generator = holder.chat_generator
        if not getattr(generator, "_bench_counted", False):
            log.wrap(generator, path)
            generator._bench_counted = True
            if hasattr(generator, "warm_up"):
                generator.warm_up()
        used[path] = getattr(generator, "model", type(generator).__name__)
    return used


# -------------------------------------------------------------------------------------------------- small helpers
def parse_limits(text: str | None, names: list[str]) -> dict[str, int | None]:
    """`"10"` -> every set 10; `"labor-es=10,constitucion=5"` -> those (others 0); None -> no cap.
    Sets named but not in `names` (not loaded) are ignored."""
    if text is None:
        return {name: None for name in names}
    text = text.strip()
    if "=" not in text:
        return {name: int(text) for name in names}
    limits: dict[str, int | None] = {name: 0 for name in names}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = item.partition("=")
        if name.strip() in limits:
            limits[name.strip()] = int(value)
    return limits


def parse_options(items: list[str]) -> dict[str, bool]:
    options = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--ask-option looks like use_hyde=on, got {item!r}")
        options[name.strip()] = value.strip().lower() in ("1", "true", "yes", "on")
    return options


def cold_caches(lex: LexHay) -> None:
    """Empty the engine's caches (request, query embeddings, re-ranker scores): every question is timed as a new
    request, and no configuration reuses another one's work on the same question."""
    if hasattr(lex, "clear_caches"):
        lex.clear_caches()
    elif query_embedding_cache is not None:
        query_embedding_cache().clear()


def loadavg() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def ranking(docs: list[Any]) -> list[tuple[str, str]]:
    return article_ranking((d.meta.get("law_id"), d.meta.get("article")) for d in docs)


def short_error(error: str) -> str:
    low = error.lower()
    if "timeout" in low:
        return "timeout"
    if "context" in low or "n_ctx" in low or "exceed" in low:
        return "context"
    return "other"


# ------------------------------------------------------------------------------------------ 1. retrieval quality
def retrieval_phase(
    lex: LexHay,
    stage_paths: list[tuple[str, ...]],
    log: CallLog,
    datasets: dict[str, list[dict[str, Any]]],
    backends: list[str],
    llm_limits: dict[str, int | None],
) -> dict[str, Any]:
    """Per set, question and backend: the stage outputs and the ranking + latency of each configuration."""
    pipe = lex.pipeline("query")
    decompose, hyde, retriever = (pipe.get_component(n) for n in ("decompose", "hyde", "retriever"))
    filters = lex._restricted(None, None)  # what the access stage gives an anonymous caller: global documents
    retriever.run(queries=["periodo de prueba"], filters=filters)  # warm caches

    def retrieve(queries: list[str], document: str | None) -> tuple[list[tuple[str, str]], float]:
        cold_caches(lex)
        started = time.perf_counter()
        docs = retriever.run(queries=queries, filters=filters, hypothetical_document=document)["documents"]
        return ranking(docs), (time.perf_counter() - started) * 1000

    results: dict[str, Any] = {"load_start": loadavg(), "sets": {}}
    plain: dict[str, list[tuple[list, float]]] = {}
    for name, items in datasets.items():
        plain[name] = [retrieve([item["question"]], None) for item in items]
    deployed_llm_on_first_question = decompose.llm_on_first_question
    for backend in backends:
        use_backend(pipe, stage_paths, backend, log)
        # an LLM backend's `+decompose` row measures its keyword queries, added after the deterministic one
        # (`llm_on_first_question`); the `none` row is what a first question gets by default with any backend
        decompose.llm_on_first_question = BACKENDS[backend] is not None
        if BACKENDS[backend] is not None:  # one untimed call per stage: model loaded, system prompt cached once
            decompose.run(query="¿Cuántos días de vacaciones tengo?")
            hyde.run(query="¿Cuántos días de vacaciones tengo?", enabled=True)
        for name, items in datasets.items():
            limit = llm_limits[name] if BACKENDS[backend] is not None else None
            rows = []
            for n, item in enumerate(items[:limit] if limit is not None else items):
                question = item["question"]
                mark = log.mark()
                started = time.perf_counter()
                dec = decompose.run(query=question, enabled=True)
                dec_ms = (time.perf_counter() - started) * 1000
                dec_calls = len(log.since(mark))
                mark = log.mark()
                started = time.perf_counter()
                hyp = hyde.run(query=question, enabled=True)
                hyde_ms = (time.perf_counter() - started) * 1000
                hyde_calls = len(log.since(mark))
                per_config = {"plain": {"ranking": plain[name][n][0], "ms": plain[name][n][1], "calls": 0}}
                for config, (use_dec, use_hyde) in CONFIGS.items():
                    if config == "plain":
                        continue
                    queries = dec["queries"] if use_dec else [question]
                    ranked, ms = retrieve(queries, hyp["hypothetical_document"] if use_hyde else None)
                    per_config[config] = {
                        "ranking": ranked,
                        "ms": ms + (dec_ms if use_dec else 0.0) + (hyde_ms if use_hyde else 0.0),
                        "calls": (dec_calls if use_dec else 0) + (hyde_calls if use_hyde else 0),
                    }
                rows.append({
                    "id": item.get("id"),
                    "queries": dec["queries"],
                    "decompose_fallback": dec["fallback"],
                    "decompose_path": dec["trace"].get("path"),
                    "hyde_fallback": hyp["fallback"],
                    "hypothetical_document": hyp["hypothetical_document"],
                    "configs": per_config,
                })
                console.print(f"[dim]{backend} {name} {n + 1}: {dec['queries']} ({dec_ms:.0f} + {hyde_ms:.0f} ms)[/dim]")
            results["sets"].setdefault(name, {})[backend] = rows
    decompose.llm_on_first_question = deployed_llm_on_first_question
    results["load_end"] = loadavg()
    return results


def retrieval_tables(results: dict[str, Any], datasets: dict[str, list[dict[str, Any]]], backends: list[str]) -> None:
    for name, items in datasets.items():
        per_backend = results["sets"][name]
        sizes = sorted({len(rows) for rows in per_backend.values()}, reverse=True)
        for size in sizes:
            if size == 0:
                continue
            subset = items[:size]
            table = Table(
                title=f"Retrieval quality, dev-{name}: first {size} of {len(items)} questions "
                f"(article level; p50 = LLM stage(s) + retrieval, ms; loadavg 1/5/15 min {results['load_start']} "
                f"-> {results['load_end']})",
                box=box.MARKDOWN,
            )
            for column in ("configuration", "backend", *METRICS, "p50 ms", "p95 ms", "LLM calls/q", "fallbacks"):
                table.add_column(column, justify="left" if column in ("configuration", "backend") else "right")
            for config, (use_dec, use_hyde) in CONFIGS.items():
                candidates = backends if config != "plain" else [
                    next(b for b in backends if len(per_backend.get(b, [])) >= size)]
                for backend in candidates:
                    rows = per_backend.get(backend, [])
                    if len(rows) < size:
                        continue
                    rows = rows[:size]
                    entries = [row["configs"][config] for row in rows]
                    scores = score_rankings([e["ranking"] for e in entries], subset)
                    latencies = [e["ms"] for e in entries]
                    fallbacks = []
                    if BACKENDS[backend] is not None:
                        if use_dec:
                            fallbacks.append(f"dec {sum(r['decompose_fallback'] for r in rows)}/{size}")
                        if use_hyde:
                            fallbacks.append(f"hyde {sum(r['hyde_fallback'] for r in rows)}/{size}")
                    table.add_row(
                        config,
                        "-" if config == "plain" else backend,
                        *(f"{scores[m]:.3f}" for m in METRICS),
                        f"{percentile(latencies, 50):.0f}",
                        f"{percentile(latencies, 95):.0f}",
                        f"{statistics.mean(e['calls'] for e in entries):.2f}",
                        ", ".join(fallbacks) or ("deterministic" if config != "plain" else "-"),
                    )
            console.print(table)


# ---------------------------------------------------------------------------------------------- 2. answer loop
def answer_phase(
    lex: LexHay,
    log: CallLog,
    datasets: dict[str, list[dict[str, Any]]],
    limits: dict[str, int | None],
    options: dict[str, bool],
) -> dict[str, Any]:
    lex.ask("¿Cuántos días de vacaciones tengo?", options=options)  # untimed: models and prompt prefixes warm
    results: dict[str, Any] = {"load_start": loadavg(), "rows": []}
    for name, items in datasets.items():
        limit = limits[name]
        for item in items[:limit] if limit is not None else items:
            mark = log.mark()
            cold_caches(lex)
            started = time.perf_counter()
            out = lex.ask(item["question"], options=options)
            seconds = time.perf_counter() - started
            calls = log.since(mark)
            cited = {(c.get("law_id"), str(c.get("article"))) for c in out["citations"]}
            need = out["trace"].get("need_retry")
            row = {
                "set": name,
                "id": item.get("id"),
                "seconds": seconds,
                "calls": [{k: v for k, v in c.items()} for c in calls],
                "route": out["route"],
                "crag_retries": (out["trace"].get("crag") or {}).get("retries") or 0,
                "need_retry": bool(need),
                "need": out["need"],
                "fallbacks": {k: v for k, v in out["fallbacks"].items() if v is not None},
                "gate": out["trace"].get("gate"),
                "queries": out["trace"].get("queries"),
                "cites_labelled": bool(cited & item["relevant"]),
                "n_citations": len(cited),
                "unverified": len(out["unverified_citations"]),
                "answer": out["answer"][:400],
            }
            results["rows"].append(row)
            by_stage = Counter(c["stage"] for c in calls)
            errors = [f"{c['stage']}:{short_error(c['error'])}" for c in calls if c.get("error")]
            console.print(
                f"[dim]ask {name} {item.get('id')}: {seconds:.1f} s, calls {dict(by_stage)}, errors {errors}, "
                f"route {row['route']}, fallbacks {row['fallbacks']}, cites labelled {row['cites_labelled']}[/dim]"
            )
    results["load_end"] = loadavg()
    return results


def tps(call: dict[str, Any]) -> str:
    if call.get("prompt_tps") is None:
        return ""
    return f" ({call['prompt_tps']:.0f}, {call.get('generation_tps') or 0:.1f})"


def answer_tables(results: dict[str, Any], backend: str, options: dict[str, bool], flags: dict[str, bool]) -> None:
    rows = results["rows"]
    groups = {"all": rows}
    for name in dict.fromkeys(r["set"] for r in rows):
        groups[name] = [r for r in rows if r["set"] == name]
    on = ", ".join(sorted(k for k, v in flags.items() if v))
    table = Table(
        title=f"Answer loop, LexHay.ask with {backend} (flags on: {on}; loadavg 1/5/15 min {results['load_start']} "
        f"-> {results['load_end']})",
        box=box.MARKDOWN,
    )
    columns = ("questions", "n", "p50 s", "p95 s", "LLM calls/q", "calls by stage", "LLM errors", "fallbacks",
               "cites labelled", "routes", "CRAG retries", "NEED retries", "answer prompt tok p50/max")
    for column in columns:
        table.add_column(column, justify="left" if column in ("questions", "calls by stage") else "right")
    for name, group in groups.items():
        if not group:
            continue
        n = len(group)
        calls = [c for r in group for c in r["calls"]]
        per_question = Counter(len(r["calls"]) for r in group)
        stages = Counter(c["stage"] for c in calls)
        errors = Counter(f"{c['stage']}:{short_error(c['error'])}" for c in calls if c.get("error"))
        fallbacks = Counter(k for r in group for k, v in r["fallbacks"].items() if v)
        routes = Counter(r["route"] for r in group)
        answer_tokens = [c["prompt_tokens"] for c in calls if c["stage"] == "answer" and c.get("prompt_tokens")]
        table.add_row(
            name,
            str(n),
            f"{percentile([r['seconds'] for r in group], 50):.1f}",
            f"{percentile([r['seconds'] for r in group], 95):.1f}",
            f"{len(calls) / n:.2f} ({' '.join(f'{k}:{v}' for k, v in sorted(per_question.items()))})",
            " ".join(f"{k}:{v}" for k, v in sorted(stages.items())),
            " ".join(f"{k}:{v}" for k, v in sorted(errors.items())) or "0",
            " ".join(f"{k}:{v}" for k, v in sorted(fallbacks.items())) or "0",
            f"{sum(r['cites_labelled'] for r in group)}/{n}",
            " ".join(f"{k}:{v}" for k, v in sorted(routes.items())),
            str(sum(r["crag_retries"] for r in group)),
            str(sum(r["need_retry"] for r in group)),
            f"{percentile(answer_tokens, 50):.0f}/{max(answer_tokens)}" if answer_tokens else "-",
        )
    console.print(table)

    detail = Table(title="Answer loop per question (s; LLM calls as stage:seconds; ! = failed call)", box=box.MARKDOWN)
    for column in ("id", "s", "LLM calls", "route", "fallbacks", "cites labelled",
                   "answer prompt chars/tok (prompt, generation tok/s)"):
        detail.add_column(column, justify="left" if column in ("id", "LLM calls", "fallbacks") else "right")
    for r in rows:
        answer_calls = [c for c in r["calls"] if c["stage"] == "answer"]
        detail.add_row(
            str(r["id"]),
            f"{r['seconds']:.1f}",
            " ".join(f"{c['stage']}:{c['seconds']:.1f}{'!' + short_error(c['error']) if c.get('error') else ''}"
                     for c in r["calls"]),
            f"{r['route']}{'+' + str(r['crag_retries']) + 'retry' if r['crag_retries'] else ''}",
            ",".join(k for k, v in r["fallbacks"].items() if v) or "-",
            "yes" if r["cites_labelled"] else "no",
            " ".join(f"{c['prompt_chars']}/{c.get('prompt_tokens') or '?'}{tps(c)}" for c in answer_calls) or "-",
        )
    console.print(detail)
    errors = sorted({c["error"] for r in rows for c in r["calls"] if c.get("error")})
    for error in errors[:5]:
        console.print(f"LLM error: {error}")


# ---------------------------------------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".bench" / "final"),
                        help="embedded store with the full corpus (benchmark a copy: one process per shard)")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS), help="comma-separated labelled JSONL files")
    parser.add_argument("--limit", default=None,
                        help="first N questions per set for every backend: N or set=N,set=N (0 = skip the set)")
    parser.add_argument("--llm-limit", default="10",
                        help="first N questions per set for the local LLM backends: N or set=N,set=N (default 10)")
    parser.add_argument("--backends", default="none,local-0.5b",
                        help=f"comma-separated, of {', '.join(BACKENDS)} (default none,local-0.5b)")
    parser.add_argument("--skip-retrieval", action="store_true", help="skip table 1")
    parser.add_argument("--skip-answers", action="store_true", help="skip table 2 (answer loop)")
    parser.add_argument("--answer-backend", default=None, help="local backend of the answer loop (default: the "
                        "first local one in --backends, else local-0.5b)")
    parser.add_argument("--answer-sets", default="labor-es=10,constitucion=5",
                        help="questions of the answer loop: N or set=N,set=N (default labor-es=10,constitucion=5)")
    parser.add_argument("--ask-option", action="append", default=[],
                        help="LexHay.ask option, repeatable, e.g. use_hyde=on (default: the deployment's flags)")
    parser.add_argument("--json", default=None, help="write every per-question record to this JSON file")
    args = parser.parse_args()

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend(s) {unknown}; known: {list(BACKENDS)}")
    answer_backend = args.answer_backend or next((b for b in backends if BACKENDS[b]), "local-0.5b")
    if BACKENDS.get(answer_backend) is None and not args.skip_answers:
        parser.error(f"--answer-backend must be a local backend ({[b for b in BACKENDS if BACKENDS[b]]})")
    datasets = {Path(raw).stem.replace("dev-", ""): load_labelled(raw)
                for raw in filter(None, (p.strip() for p in args.sets.split(",")))}
    names = list(datasets)
    for text in (args.limit, args.llm_limit, args.answer_sets):
        unknown_sets = [i.partition("=")[0].strip() for i in (text or "").split(",") if "=" in i]
        if any(name not in names for name in unknown_sets):
            parser.error(f"unknown set in {text!r}; sets: {names}")
    limits = parse_limits(args.limit, names)
    datasets = {name: items[: limits[name]] for name, items in datasets.items() if limits[name] != 0}
    names = list(datasets)
    llm_limits = parse_limits(args.llm_limit, names)
    options = parse_options(args.ask_option)

    os.environ[LLM_ENV] = "none"  # loaded without an LLM; each phase gives the stages its backend (use_backend)
    lex = LexHay(store_path=args.store, embedder=args.embedder)
    pipe = lex.pipeline("query")
    stage_paths = llm_stage_paths(pipeline_path("query"))
    console.print(
        f"store {args.store}: {lex.document_store.count_documents()} chunks; LLM stages (null chat_generator in "
        f"yaml/query.yaml): {['.'.join(p) for p in stage_paths]}; compressor in query.yaml: "
        f"{any('compressor' in n for n, _ in pipe.walk())}; loadavg {loadavg()}; {cpu_summary()}"
    )
    log = CallLog()
    record: dict[str, Any] = {"args": vars(args)}
    if not args.skip_retrieval:
        results = retrieval_phase(lex, stage_paths, log, datasets, backends, llm_limits)
        retrieval_tables(results, datasets, backends)
        record["retrieval"] = results
    if not args.skip_answers:
        used = use_backend(pipe, stage_paths, answer_backend, log)
        console.print(f"answer loop generators: {used}")
        results = answer_phase(lex, log, datasets, parse_limits(args.answer_sets, names), options)
        from pipelines.flags import request_flags  # noqa: PLC0415

        answer_tables(results, answer_backend, options, request_flags(lex.settings.flags, options))
        record["answers"] = results
    if args.json:
        Path(args.json).write_text(json.dumps(record, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    lex.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
