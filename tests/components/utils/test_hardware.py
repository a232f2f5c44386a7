"""The CPU description the benchmarks print, and the bfloat16 check the dense backends choose their precision by."""

from components.utils import hardware
from components.utils.hardware import cpu_has_native_bf16, cpu_summary, describe_cpu

# two processors, as /proc/cpuinfo lists them (trimmed): the description reads the first
INTEL_AMX = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n"
)
AMD_ZEN4 = "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n"
AVX2_ONLY = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu sse2 avx avx2 fma\n"


def test_describe_cpu_names_the_fastest_native_bfloat16():
    assert describe_cpu(INTEL_AMX, 2) == (
        "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz, 2 cores, native bfloat16: AMX-BF16"
    )
    assert describe_cpu(AMD_ZEN4, 4) == "AMD EPYC 9B14, 4 cores, native bfloat16: AVX512-BF16"
    assert describe_cpu(AVX2_ONLY, 2).endswith("native bfloat16: none")


def test_describe_cpu_without_cpuinfo():
    assert describe_cpu("", None) == "unknown CPU, cores unknown, native bfloat16: none"


def test_cpu_has_native_bf16_reads_the_flags(tmp_path, monkeypatch):
    for text, expected in ((INTEL_AMX, True), (AMD_ZEN4, True), (AVX2_ONLY, False), (None, False)):
        path = tmp_path / "cpuinfo"
        if text is None:
            path.unlink(missing_ok=True)  # no /proc/cpuinfo (not Linux): float32
        else:
            path.write_text(text, encoding="utf-8")
        monkeypatch.setattr(hardware, "CPUINFO", path)
        cpu_has_native_bf16.cache_clear()
        assert cpu_has_native_bf16() is expected
    cpu_has_native_bf16.cache_clear()


def test_cpu_summary_of_this_machine():
    line = cpu_summary()
    assert "cores" in line and "native bfloat16: " in line
    assert line.endswith(("AMX-BF16", "AVX512-BF16", "none"))
