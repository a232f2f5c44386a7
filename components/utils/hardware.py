"""What the CPU can do natively, read once: the dense embedders' backends pick their precision from it, and the
benchmarks name the machine their figures come from."""

import os
from functools import cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# native bfloat16 matrix instructions, the fastest first: the dense model's speed follows them
BF16_FLAGS = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))


def _read_cpuinfo() -> str:
    try:
        return CPUINFO.read_text(encoding="utf-8")
    except OSError:
        return ""


@cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX-BF16 or AVX512-BF16; Linux `/proc/cpuinfo`)."""
    return _native_bf16(set(_read_cpuinfo().split())) is not None


def _native_bf16(flags: set[str]) -> str | None:
    """The label of the fastest native bfloat16 instructions among a CPU's `flags`, `None` without any."""
    return next((label for flag, label in BF16_FLAGS if flag in flags), None)


def describe_cpu(cpuinfo: str, cores: int | None) -> str:
    """
    One line naming a CPU from the text of Linux `/proc/cpuinfo`: its model, the cores this process may use and its
    fastest native bfloat16 instructions ("none": the dense model runs in float32).

    >>> describe_cpu("model name\\t: AMD EPYC\\nflags\\t\\t: fpu avx2 avx512_bf16\\n", 2)
    'AMD EPYC, 2 cores, native bfloat16: AVX512-BF16'
    """
    model, flags = "unknown CPU", set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and model == "unknown CPU":
            model = value.strip() or model
        elif name == "flags" and not flags:
            flags = set(value.split())
    native = _native_bf16(flags) or "none"
    count = f"{cores} cores" if cores else "cores unknown"
    return f"{model}, {count}, native bfloat16: {native}"


@cache
def cpu_summary() -> str:
    """`describe_cpu` of this machine: what a benchmark prints beside its figures."""
    try:
        cores: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count()
    return describe_cpu(_read_cpuinfo(), cores)
