#!/usr/bin/env python
"""
TTLCache micro benchmark (not a test): microseconds per `set` and per `get` of `components.utils.ttl_cache.TTLCache`
below and at capacity, for the current implementation (`cachetools.TTLCache` inside) and the hand-written one it
replaced (an `OrderedDict` whose `set` scanned every entry under the lock once the cache was full), read from git
history so both run in this process on the same machine.

    .venv/bin/python benchmarks/cache_bench.py [--sizes 1000,10000] [--old-rev 18630a2] [--repeat 3]

`below capacity`: inserts into an empty cache of `size` entries until it holds `size`; `at capacity`: `size`
further inserts into the full cache (every insert evicts one entry, none has expired: the reranker score cache
in a busy deployment); `get`: lookups of present keys. The best of `--repeat` runs is printed.
"""

import argparse
import os
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.utils.ttl_cache import TTLCache  # noqa: E402

OLD_PATH = "components/ttl_cache.py"  # where the hand-written cache lived before the role folders
console = Console(width=160)


def old_implementation(rev: str) -> type:
    """The hand-written TTLCache class as it was at git revision `rev`."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{OLD_PATH}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("old_ttl_cache")
    exec(compile(source, f"{rev}:{OLD_PATH}", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module.TTLCache


def per_op_us(fn, n: int) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) / n * 1e6


def measure(cls: type, size: int, repeat: int) -> dict[str, float]:
    """Best-of-`repeat` µs per operation for one implementation and capacity."""
    best = {"below": float("inf"), "at": float("inf"), "get": float("inf")}
    # at capacity the old set costs O(size): cap the number of timed inserts so the run stays short
    at_n = min(size, 2000)
    for _ in range(repeat):
        cache = cls(max_entries=size, ttl=300)

        def fill(cache=cache) -> None:
            for i in range(size):
                cache.set(("q", i), 0.5)

        def overflow(cache=cache) -> None:
            for i in range(size, size + at_n):
                cache.set(("q", i), 0.5)

        def lookups(cache=cache) -> None:
            for i in range(at_n, size + at_n):  # the keys still present
                cache.get(("q", i))

        best["below"] = min(best["below"], per_op_us(fill, size))
        best["at"] = min(best["at"], per_op_us(overflow, at_n))
        best["get"] = min(best["get"], per_op_us(lookups, size))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="cache capacities (comma-separated)")
    parser.add_argument("--old-rev", default="18630a2", help=f"git revision holding the old {OLD_PATH}")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    implementations = {
        f"hand-written ({args.old_rev})": old_implementation(args.old_rev),
        "cachetools.TTLCache": TTLCache,
    }
    table = Table(title=f"TTLCache µs per operation (best of {args.repeat}; load {os.getloadavg()[0]:.2f})")
    for column in ("implementation", "entries", "set below capacity", "set at capacity", "get"):
        table.add_column(column, justify="right" if column != "implementation" else "left")
    for size in sizes:
        for name, cls in implementations.items():
            result = measure(cls, size, args.repeat)
            table.add_row(name, f"{size:,}", f"{result['below']:.2f}", f"{result['at']:.2f}", f"{result['get']:.2f}")
    console.print(table)
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
