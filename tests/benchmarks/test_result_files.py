"""How benchmark results name the machine they were measured on."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(("flags", "named"), [
    ({"sse4_2", "avx2", "avx512f", "avx512_vnni"}, "AVX-512 with VNNI"),
    ({"avx2", "avx512f", "avx512bw"}, "AVX-512 without VNNI"),
    ({"avx2", "avx_vnni"}, "AVX2 with AVX-VNNI"),
    ({"avx", "avx2", "fma"}, "AVX2 without VNNI"),
    ({"sse4_2"}, None),
])
def test_the_cpu_is_named_with_the_vector_extensions_int8_speed_depends_on(
        flags: set[str], named: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    result_files = importlib.import_module("benchmarks.common.results")
    assert result_files.vector_extensions(flags) == named
