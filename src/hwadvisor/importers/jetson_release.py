"""``jetson_release`` (jetson-stats): the Jetson module, L4T, JetPack and library versions.

jetson-stats 4::

    Model: NVIDIA Orin Nano Developer Kit - Jetpack 5.1.4 [L4T 35.6.0]
    Hardware:
     - P-Number: p3767-0005
     - Module: NVIDIA Jetson Orin Nano (Developer kit)
    Libraries:
     - CUDA: 12.3.107

jetson-stats 2 and 3 print ``NVIDIA Jetson AGX Xavier [16GB]`` then `` L4T 32.6.1 [ JetPack 4.6
]`` and ``CUDA Architecture: 7.2``; jtop's issue template (`` - Module: ...``, `` - CUDA Arch BIN:
8.7``) is read the same way. The module names the GPU; the memory in its name, where stated, is
the memory the GPU shares with the CPU.
"""

from __future__ import annotations

import re

from hwadvisor.catalog.peaks import find_gpu_peak
from hwadvisor.importers.base import Imported, ImportFormatError, Sample, empty_profile, new_gpu
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact

SRC = Source.JETSON_RELEASE
MISSING = "not in jetson_release output"

_V4_MODEL = re.compile(
    r"(?m)^\s*(?:-\s*)?Model:\s*(.+?)\s*(?:-\s*Jetpack\s+(\S+)\s*)?(?:\[L4T\s+([\d.]+)\])?\s*$"
)
_MODULE = re.compile(r"(?m)^\s*-\s*Module:\s*(.+?)\s*$")
_OLD_MODEL = re.compile(r"(?m)^\s*(NVIDIA Jetson [^\n\[]+?(?:\s*\[[^\]\n]+\])?)\s*$")
_L4T = re.compile(r"L4T[:\s]+\[?\s*([\d.]+)")
_JETPACK = re.compile(r"Jet[Pp]ack[:\s]+\[?\s*([\d.]+(?: ?DP)?)")
_CUDA = re.compile(r"(?m)^\s*-?\s*CUDA[:\s]+([\d.]+)\s*$")
_ARCH = re.compile(r"(?m)^\s*-?\s*CUDA (?:Arch BIN|Architecture):\s*([\d.]+)")
_SNIFF = re.compile(
    r"Software part of jetson-stats|^\s*-\s*Module:\s*NVIDIA Jetson|"
    r"^\s*NVIDIA Jetson [^\n]*\n\s*L4T\s+[\d.]+\s*\[\s*JetPack|^\s*-\s*CUDA Arch BIN:",
    re.MULTILINE,
)
_MISSING_WORDS = re.compile(r"\*\*MISSING\*\*|^MISSING$", re.IGNORECASE)


class JetsonReleaseError(ImportFormatError):
    """The text names no Jetson module."""


def looks_like_jetson_release(sample: Sample) -> bool:
    """jetson-stats' banner, a `` - Module: NVIDIA Jetson ...`` line, or the old layout."""
    return _SNIFF.search(sample.head) is not None


def _module(text: str) -> str | None:
    """The most specific module name: `` - Module:`` (when not missing), else the Model line,
    else the old layout's first line."""
    for pattern in (_MODULE, _V4_MODEL, _OLD_MODEL):
        for match in pattern.finditer(text):
            name = match.group(1).strip()
            if name and not _MISSING_WORDS.search(name):
                return name
    return None


def parse_jetson_release(sample: Sample) -> Imported:
    """Read the Jetson module, its CUDA architecture and the software versions.

    Raises :class:`JetsonReleaseError` when no module or model is named.
    """
    text = sample.text
    module = _module(text)
    if module is None:
        raise JetsonReleaseError(
            "no module or model line (' - Module: ...' or 'Model: ...'); paste the whole "
            "`jetson_release` output, or `cat /proc/device-tree/model`"
        )
    # The Model line may name only the carrier ("NVIDIA Orin Nano Developer Kit"): when the
    # Module line is missing, the model is used as it is.
    peak = find_gpu_peak(module, fallback=False)
    model = _V4_MODEL.search(text)
    if peak is None and model:
        other = model.group(1).strip()
        if other != module and find_gpu_peak(other, fallback=False) is not None:
            module = other
    notes = []
    versions = []
    l4t = _L4T.search(text)
    jetpack = _JETPACK.search(text)
    cuda = _CUDA.search(text)
    if l4t:
        versions.append(f"L4T {l4t.group(1)}")
    if jetpack:
        versions.append(f"JetPack {jetpack.group(1)}")
    if cuda:
        versions.append(f"CUDA {cuda.group(1)}")
    if versions:
        notes.append(", ".join(versions) + " (jetson_release)")
    notes.append("the GPU shares the module's memory with the CPU")
    arch = _ARCH.search(text)
    memory = re.search(r"(\d+)\s*GB", module, re.IGNORECASE)
    gpu = new_gpu(
        0,
        vendor="nvidia",
        backend="cuda",
        source=SRC,
        missing=MISSING,
        name=fact(module, SRC),
        compute_capability=fact(arch.group(1) if arch else None, SRC, MISSING),
        vram_total_bytes=fact(
            int(memory.group(1)) * 2**30 if memory else None,
            SRC,
            "jetson_release states the module's memory only in some module names",
        ),
    )
    return Imported(empty_profile(gpus=[gpu]), notes=notes)


FORMAT = Format(
    name="jetson_release",
    source=SRC,
    sniff=looks_like_jetson_release,
    parse=parse_jetson_release,
    rank=70,
    example="jetson_release",
)
