"""The instruction-set features that matter for deep learning, and the names tools give them.

Shared by the CPU probe and the importers (which must not pull in the probe's psutil).
"""

from __future__ import annotations

from collections.abc import Iterable

#: The instruction-set features that matter for deep learning, in report order, with the names
#: Linux (/proc/cpuinfo), py-cpuinfo (CPUID) and macOS (``sysctl hw.optional``) give them.
ISA_FEATURES: dict[str, tuple[str, ...]] = {
    "sse4_2": ("sse4_2", "sse4.2"),
    "avx": ("avx", "avx1.0", "avx1_0"),
    "avx2": ("avx2", "avx2_0"),
    "fma": ("fma", "fma3"),
    "f16c": ("f16c",),
    "avx512f": ("avx512f",),
    "avx512bw": ("avx512bw",),
    "avx512vl": ("avx512vl",),
    "avx512_vnni": ("avx512_vnni", "avx512vnni"),
    "avx512_bf16": ("avx512_bf16", "avx512bf16"),
    "avx512_fp16": ("avx512_fp16", "avx512fp16"),
    "avx_vnni": ("avx_vnni", "avxvnni"),
    "amx_tile": ("amx_tile", "amxtile", "amx-tile"),
    "amx_bf16": ("amx_bf16", "amxbf16", "amx-bf16"),
    "amx_int8": ("amx_int8", "amxint8", "amx-int8"),
    "neon": ("asimd", "neon", "advsimd", "feat_advsimd"),
    "asimdhp": ("asimdhp", "neon_fp16", "feat_fp16"),
    "bf16": ("bf16", "feat_bf16"),
    "i8mm": ("i8mm", "feat_i8mm"),
    "sve": ("sve", "feat_sve"),
    "sve2": ("sve2", "feat_sve2"),
    "sme": ("sme", "feat_sme"),
}
_ISA_ALIASES = {alias: name for name, aliases in ISA_FEATURES.items() for alias in aliases}


def isa_from_tokens(tokens: Iterable[str]) -> list[str]:
    """The known features among ``tokens`` (flags as Linux, CPUID or macOS spell them), in
    report order."""
    found = {_ISA_ALIASES[t.lower()] for t in tokens if t.lower() in _ISA_ALIASES}
    return [name for name in ISA_FEATURES if name in found]
