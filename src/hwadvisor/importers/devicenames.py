"""Naming a GPU that a device-listing tool (lspci, lshw, inxi, clinfo, xpu-smi, sycl-ls) printed:
by the product name it shows when the GPU catalog knows it, else by its PCI id when the catalog
lists that id, else by the name as printed.

These tools list every display device, compute GPU or not: a server's BMC display (ASPEED,
Matrox), a laptop's integrated Intel or AMD graphics. :func:`is_compute_gpu` says which are kept
as GPUs of the profile: every NVIDIA device, and AMD and Intel ones that the catalog knows or whose
name says they are discrete compute parts (Instinct, Radeon Pro, Arc, Data Center GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hwadvisor.catalog.peaks import find_gpu_by_pci_id, find_gpu_peak
from hwadvisor.model.facts import Fact, Source, fact, unknown

#: PCI vendor ids of display devices, as the PCI ID Repository (pci.ids) lists them.
PCI_VENDORS = {
    "10de": "nvidia",
    "1002": "amd",
    "8086": "intel",
    "1a03": "aspeed",
    "102b": "matrox",
    "1414": "microsoft",
    "15ad": "vmware",
    "1234": "qemu",
    "1af4": "virtio",
}

#: The framework backend that drives each vendor's GPUs.
BACKENDS = {"nvidia": "cuda", "amd": "rocm", "intel": "xpu"}

_VENDOR_WORDS = (
    (re.compile(r"\bnvidia\b|\bgeforce\b|\bquadro\b|\btesla\b", re.IGNORECASE), "nvidia"),
    (
        re.compile(
            r"advanced micro devices|\bamd\b|\bati\b|\bradeon\b|\binstinct\b|\bgfx\d", re.IGNORECASE
        ),
        "amd",
    ),
    (re.compile(r"\bintel\b", re.IGNORECASE), "intel"),
    (re.compile(r"\baspeed\b", re.IGNORECASE), "aspeed"),
    (re.compile(r"\bmatrox\b", re.IGNORECASE), "matrox"),
    (re.compile(r"\bmicrosoft\b", re.IGNORECASE), "microsoft"),
    (re.compile(r"\bvmware\b", re.IGNORECASE), "vmware"),
)

#: Words that make an AMD or Intel device a discrete compute part though the catalog lacks it.
_DISCRETE = re.compile(
    r"\binstinct\b|\bradeon (?:pro|rx|vii)\b|\bfirepro\b|\bmi\d{2,3}\w*\b|"
    r"\barc\b|data center gpu|\bgpu (?:max|flex)\b|\bponte vecchio\b",
    re.IGNORECASE,
)

#: Bracketed product names: lspci's "GA102 [GeForce RTX 3090]", inxi's "GP104 [GeForce GTX 1080]".
_BRACKET = re.compile(r"\[([^\[\]]+)\]")
#: A bracket that names the vendor, not the product: "[AMD/ATI]", "[AMD]".
_VENDOR_BRACKET = re.compile(r"^(?:AMD/ATI|AMD|ATI)$")
#: lspci's name for a device its pci.ids does not know: "Device 0bda".
_BARE_DEVICE = re.compile(r"^Device [0-9a-f]{4}$", re.IGNORECASE)

_VENDOR_PREFIX = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


def vendor_of(text: str) -> str | None:
    """The vendor a device description names ("NVIDIA Corporation GA102 ..." → nvidia)."""
    for pattern, vendor in _VENDOR_WORDS:
        if pattern.search(text):
            return vendor
    return None


def product_name(description: str) -> str | None:
    """The product a description names: the last bracket that is not the vendor's
    ("Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere [Radeon Pro WX 5100]" → "Radeon Pro WX
    5100"); None when there is none ("Intel Corporation Device 0bda")."""
    names = [b.strip() for b in _BRACKET.findall(description) if not _VENDOR_BRACKET.match(b)]
    names = [n for n in names if not re.fullmatch(r"[0-9a-f]{4}(?::[0-9a-f]{4})?", n, re.I)]
    return names[-1] if names else None


@dataclass(frozen=True)
class Named:
    """A display device as named for the profile."""

    name: Fact[str]
    note: str | None
    """Set when the name came from the catalog rather than the tool ("GPU 0: named from ...")."""
    known: bool
    """The catalog has a row for it, a compute GPU's (its row for graphics built into a CPU
    does not count)."""


def name_device(
    index: int,
    vendor: str,
    printed: str | None,
    *,
    pci_id: str | None,
    memory_bytes: int | None,
    source: Source,
    tool: str,
) -> Named:
    """The name fact of one device: the printed product name when the catalog knows it, else the
    catalog row of its PCI id ("10de:2204"), else the printed name, else unknown with the id."""
    if printed:
        candidate = printed.strip()
        prefix = _VENDOR_PREFIX.get(vendor)
        shown = (
            f"{prefix} {candidate}"
            if prefix and not candidate.lower().startswith(prefix.lower())
            else candidate
        )
        peak = find_gpu_peak(shown, memory_bytes, fallback=False)
        if peak is not None:
            # graphics built into the CPU: named, but no compute GPU of the profile
            return Named(fact(shown, source), None, not peak.integrated)
    if pci_id:
        peak = find_gpu_by_pci_id(pci_id, memory_bytes)
        if peak is not None:
            said = f"{tool} printed {printed!r}" if printed else f"{tool} printed no model name"
            note = f"GPU {index}: named from its PCI id {pci_id} ({said})"
            return Named(Fact(value=peak.name, source=Source.CATALOG), note, True)
    if printed and not _BARE_DEVICE.match(printed.strip()):
        prefix = _VENDOR_PREFIX.get(vendor)
        text = printed.strip()
        if prefix and not text.lower().startswith(prefix.lower()):
            text = f"{prefix} {text}"
        return Named(fact(text, source), None, False)
    what = f"PCI id {pci_id}" if pci_id else "no model name"
    return Named(
        unknown(f"{tool} printed {what}, which hwadvisor's GPU catalog does not list", source),
        None,
        False,
    )


def is_compute_gpu(vendor: str | None, text: str, known: bool) -> bool:
    """Whether a listed display device is a GPU for the profile: every NVIDIA device; an AMD or
    Intel one the catalog knows or whose name says it is a discrete compute part; nothing else
    (BMC displays, virtual displays, integrated graphics)."""
    if vendor == "nvidia":
        return True
    if vendor in ("amd", "intel"):
        return known or _DISCRETE.search(text) is not None
    return False


def left_out_note(names: list[str], tool: str) -> str | None:
    """The note for display devices a tool listed that are not compute GPUs."""
    if not names:
        return None
    shown = "; ".join(dict.fromkeys(names))
    count = len(names)
    noun = "device" if count == 1 else "devices"
    return (
        f"{count} display {noun} in the {tool} output left out as not a compute GPU "
        f"(integrated, BMC or virtual display): {shown}"
    )
