#!/usr/bin/env python
"""
Load test (not a test): concurrent requests to a running `lexhay serve`, on loopback only, with bounded
concurrency; reports errors (target 0) and latency percentiles per endpoint.

    lexhay serve --store .lexhay/demo &            # or: make serve
    .venv/bin/python benchmarks/load_test.py [--url http://127.0.0.1:1416] [--requests 100] [--concurrency 100]
        [--endpoint mix|retrieve|ask|chat] [--stream] [--timeout 600] [--json]

Every request is counted: an HTTP status other than 200, a transport error or a timeout is an error. The exit
status is 1 when any request failed. The questions are generic labour-law questions written for this script.
"""

import argparse
import asyncio
import ipaddress
import json
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.evaluation import percentile  # noqa: E402

MAX_CONCURRENCY = 128
MAX_REQUESTS = 10_000
ENDPOINTS = ("retrieve", "ask", "chat")
QUESTIONS = [
    "¿Cuántos días de vacaciones me corresponden al año?",
    "¿Cuánto dura el periodo de prueba de un contrato?",
    "¿Qué indemnización me corresponde por despido improcedente?",
    "¿Cuándo se puede celebrar un contrato de interinidad?",
    "¿Cuál es la duración máxima de la jornada ordinaria de trabajo?",
    "¿Tengo derecho a permiso retribuido por matrimonio?",
    "¿Qué requisitos tiene un contrato eventual por circunstancias de la producción?",
    "¿Cuánto dura la baja por nacimiento de un hijo?",
    "¿Puede la empresa modificar mi horario sin mi consentimiento?",
    "¿Qué plazo tengo para reclamar un despido?",
    "¿Cuántas horas extraordinarias se pueden hacer al año?",
    "¿Qué es la excedencia voluntaria y cuánto puede durar?",
    "¿Cómo se calcula el salario mínimo interprofesional?",
    "¿Cuándo se considera un despido objetivo?",
    "¿Qué derechos tienen los representantes de los trabajadores?",
    "¿Tengo derecho a prestación por desempleo si me despiden?",
    "¿Qué obligaciones tiene el empresario en prevención de riesgos laborales?",
    "¿Puedo reducir mi jornada para cuidar de un hijo menor?",
    "¿Cuál es el descanso mínimo entre jornadas?",
    "¿Qué ocurre si trabajo en un día festivo?",
]


def is_loopback(url: str) -> bool:
    """True when every address the URL's host resolves to is a loopback address."""
    host = urlparse(url).hostname
    if not host:
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def request_for(endpoint: str, question: str, stream: bool) -> tuple[str, dict[str, Any]]:
    """Path and JSON body of one request."""
    if endpoint == "retrieve":
        return "/retrieve/run", {"question": question, "top_k": 10}
    if endpoint == "ask":
        return "/ask/run", {"question": question}
    return "/v1/chat/completions", {"model": "lexhay", "stream": stream,
                                    "messages": [{"role": "user", "content": question}]}


async def one_request(client: httpx.AsyncClient, endpoint: str, question: str, stream: bool) -> dict[str, Any]:
    """Send one request; its endpoint, latency and error (None when it succeeded)."""
    path, body = request_for(endpoint, question, stream)
    started = time.perf_counter()
    error = None
    try:
        if endpoint == "chat" and stream:
            async with client.stream("POST", path, json=body) as response:
                events = [line[6:] async for line in response.aiter_lines() if line.startswith("data: {")]
                final = json.loads(events[-1]).get("lexhay") if events else None
                if response.status_code != 200:
                    error = f"HTTP {response.status_code}"
                elif not isinstance(final, dict) or final.get("error"):
                    error = f"stream without a final answer chunk: {final}"[:160]
        else:
            response = await client.post(path, json=body)
            if response.status_code != 200:
                error = f"HTTP {response.status_code}: {response.text[:120]}"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:160]
    return {"endpoint": endpoint, "ms": (time.perf_counter() - started) * 1000, "error": error}


async def run_load(url: str, requests: int, concurrency: int, endpoint: str, stream: bool,
                   timeout: float) -> tuple[list[dict[str, Any]], float]:
    """All requests, at most `concurrency` in flight; the results and the wall time in seconds."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    plan = [(ENDPOINTS[i % len(ENDPOINTS)] if endpoint == "mix" else endpoint, QUESTIONS[i % len(QUESTIONS)])
            for i in range(requests)]
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits, trust_env=False) as client:

        async def bounded(kind: str, question: str) -> dict[str, Any]:
            async with gate:
                return await one_request(client, kind, question, stream)

        started = time.perf_counter()
        results = await asyncio.gather(*(bounded(kind, q) for kind, q in plan))
        return list(results), time.perf_counter() - started


def summarize(results: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    """Errors and latency percentiles, overall and per endpoint."""

    def stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
        ms = [r["ms"] for r in rows]
        return {"requests": len(rows), "errors": sum(1 for r in rows if r["error"]),
                "p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1),
                "max_ms": round(max(ms), 1)}

    kinds = sorted({r["endpoint"] for r in results})
    return {
        **stats(results),
        "wall_s": round(wall, 2),
        "throughput_rps": round(len(results) / wall, 2) if wall else None,
        "per_endpoint": {k: stats([r for r in results if r["endpoint"] == k]) for k in kinds},
        "error_kinds": dict(Counter(r["error"] for r in results if r["error"]).most_common(10)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:1416", help="the server (loopback only)")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=100, help=f"requests in flight, at most {MAX_CONCURRENCY}")
    parser.add_argument("--endpoint", choices=("mix", *ENDPOINTS), default="mix")
    parser.add_argument("--stream", action="store_true", help="chat requests stream (SSE)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to one request")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    if not is_loopback(args.url):
        print(f"refusing {args.url}: the load test only targets a loopback server", file=sys.stderr)
        return 2
    if not 1 <= args.requests <= MAX_REQUESTS or not 1 <= args.concurrency <= MAX_CONCURRENCY:
        print(f"--requests must be 1..{MAX_REQUESTS} and --concurrency 1..{MAX_CONCURRENCY}", file=sys.stderr)
        return 2
    try:
        status = httpx.get(f"{args.url}/status", timeout=10, trust_env=False).json()
    except (httpx.HTTPError, ValueError) as exc:
        print(f"no lexhay server at {args.url}: {exc}", file=sys.stderr)
        return 2
    missing = {"retrieve", "ask", "lexhay"} - set(status.get("pipelines", []))
    if missing:
        print(f"the server at {args.url} lacks the pipelines {sorted(missing)}", file=sys.stderr)
        return 2
    concurrency = min(args.concurrency, args.requests)
    results, wall = asyncio.run(run_load(args.url, args.requests, concurrency, args.endpoint, args.stream,
                                         args.timeout))
    summary = {"url": args.url, "concurrency": concurrency, "endpoint": args.endpoint, "stream": args.stream,
               **summarize(results, wall)}
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print(f"{summary['requests']} requests, {concurrency} in flight, {args.endpoint}: "
              f"{summary['errors']} errors, p50 {summary['p50_ms']} ms, p95 {summary['p95_ms']} ms, "
              f"max {summary['max_ms']} ms, {summary['wall_s']} s ({summary['throughput_rps']} req/s)")
        for kind, row in summary["per_endpoint"].items():
            print(f"  {kind:8s} {row['requests']:4d} requests, {row['errors']} errors, "
                  f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, max {row['max_ms']} ms")
        for error, count in summary["error_kinds"].items():
            print(f"  error x{count}: {error}")
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
