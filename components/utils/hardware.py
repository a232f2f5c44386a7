"""What the CPU can do natively, read once: the dense embedders' backends pick their precision from it."""

from functools import cache
from pathlib import Path


@cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX-BF16 or AVX512-BF16; Linux `/proc/cpuinfo`)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags
