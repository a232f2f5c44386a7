"""The CPU description the benchmarks print, and the bfloat16 / int8 checks the dense backends choose their precision by."""

from components.utils import hardware
from components.utils.hardware import cpu_has_native_bf16, cpu_has_native_int8, cpu_summary, describe_cpu

# two processors, as /proc/cpuinfo lists them (trimmed): the description reads the first
INTEL_AMX = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n"
)
AMD_ZEN4 = "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n"
AVX2_ONLY = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu sse2 avx avx2 fma\n"


ALDER_LAKE = "processor\t: 0\nmodel name\t: 12th Gen Intel(R) Core(TM) i7-1265U\nflags\t\t: fpu avx2 avx_vnni\n"


def test_describe_cpu_names_the_fastest_native_bfloat16_and_int8():
    assert describe_cpu(INTEL_AMX, 2) == (
        "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz, 2 cores, native bfloat16: AMX-BF16, int8: AMX-INT8"
    )
    assert describe_cpu(AMD_ZEN4, 4) == "AMD EPYC 9B14, 4 cores, native bfloat16: AVX512-BF16, int8: AVX512-VNNI"
    assert describe_cpu(AVX2_ONLY, 2).endswith("native bfloat16: none, int8: none")
    assert describe_cpu(ALDER_LAKE, 2).endswith("native bfloat16: none, int8: AVX-VNNI")


def test_describe_cpu_without_cpuinfo():
    assert describe_cpu("", None) == "unknown CPU, cores unknown, native bfloat16: none, int8: none"


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


def test_cpu_has_native_int8_reads_the_flags(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    monkeypatch.setattr(hardware, "CPUINFO", path)
    for text, expected in ((INTEL_AMX, True), (AMD_ZEN4, True), (ALDER_LAKE, True), (AVX2_ONLY, False), (None, False)):
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text, encoding="utf-8")
        cpu_has_native_int8.cache_clear()
        assert cpu_has_native_int8() is expected
    cpu_has_native_int8.cache_clear()


def test_cpu_summary_of_this_machine():
    line = cpu_summary()
    assert "cores" in line and "native bfloat16: " in line and ", int8: " in line
    assert line.endswith(("AMX-INT8", "AVX512-VNNI", "AVX-VNNI", "none"))
