"""What the CPU can do natively, read once: the dense embedders' backends pick their precision from it (bfloat16
arithmetic, int8 dot products), and the benchmarks name the machine their figures come from."""

import os
from functools import cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# native bfloat16 matrix instructions, the fastest first: the dense model's speed follows them
BF16_FLAGS = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))
# native int8 dot-product instructions, the fastest first: what makes an int8-quantized model faster than bfloat16
INT8_FLAGS = (("amx_int8", "AMX-INT8"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI"))


def _read_cpuinfo() -> str:
    try:
        return CPUINFO.read_text(encoding="utf-8")
    except OSError:
        return ""


@cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX-BF16 or AVX512-BF16; Linux `/proc/cpuinfo`)."""
    return _fastest(BF16_FLAGS, set(_read_cpuinfo().split())) is not None


@cache
def cpu_has_native_int8() -> bool:
    """Whether this CPU has int8 dot-product instructions (AMX-INT8, AVX512-VNNI or AVX-VNNI; `/proc/cpuinfo`)."""
    return _fastest(INT8_FLAGS, set(_read_cpuinfo().split())) is not None


def _fastest(table: tuple[tuple[str, str], ...], flags: set[str]) -> str | None:
    """The label of the first `(flag, label)` of `table` (fastest first) whose flag is among a CPU's `flags`."""
    return next((label for flag, label in table if flag in flags), None)


def describe_cpu(cpuinfo: str, cores: int | None) -> str:
    """
    One line naming a CPU from the text of Linux `/proc/cpuinfo`: its model, the cores this process may use, its
    fastest native bfloat16 instructions ("none": the dense model runs in float32) and its fastest int8 dot-product
    instructions ("none": the dense model is not run int8-quantized).

    >>> describe_cpu("model name\\t: AMD EPYC\\nflags\\t\\t: fpu avx2 avx512_bf16 avx512_vnni\\n", 2)
    'AMD EPYC, 2 cores, native bfloat16: AVX512-BF16, int8: AVX512-VNNI'
    """
    model, flags = "unknown CPU", set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and model == "unknown CPU":
            model = value.strip() or model
        elif name == "flags" and not flags:
            flags = set(value.split())
    native = _fastest(BF16_FLAGS, flags) or "none"
    int8 = _fastest(INT8_FLAGS, flags) or "none"
    count = f"{cores} cores" if cores else "cores unknown"
    return f"{model}, {count}, native bfloat16: {native}, int8: {int8}"


@cache
def cpu_summary() -> str:
    """`describe_cpu` of this machine: what a benchmark prints beside its figures."""
    try:
        cores: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count()
    return describe_cpu(_read_cpuinfo(), cores)
