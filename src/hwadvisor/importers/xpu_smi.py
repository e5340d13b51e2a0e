"""``xpu-smi discovery`` (Intel XPU Manager): one bordered row per device::

    | Device ID | Device Information                                          |
    +-----------+-------------------------------------------------------------+
    | 0         | Device Name: Intel(R) Data Center GPU Max 1550              |
    |           | PCI Device ID: 0x0bd5                                       |
    |           | PCI BDF Address: 0000:29:00.0                               |
    |           | Memory Physical Size: 131072.00 MiB                         |

``Key: value`` lines under each ``Device ID``; xpu-smi 2.x prints the same without borders.
An integrated GPU (UHD Graphics) is listed too and left out.
"""

from __future__ import annotations

import re

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    empty_profile,
    new_gpu,
)
from hwadvisor.importers.devicenames import is_compute_gpu, left_out_note, name_device
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuInfo

SRC = Source.XPU_SMI
MISSING = "not in the xpu-smi output"

_SNIFF = re.compile(r"(?m)^\s*\|?\s*Device ID\s*\|?\s+Device Information\b")
_ROW = re.compile(
    r"^\s*\|?\s*(?P<id>\d+)?\s*\|?\s+(?P<key>[A-Za-z][\w ./()-]*?):\s*(?P<value>.*?)\s*\|?\s*$"
)
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s*(MiB|GiB|MB|GB)$", re.IGNORECASE)
_UNITS = {"mib": 2**20, "mb": 2**20, "gib": 2**30, "gb": 2**30}


class XpuSmiError(ImportFormatError):
    """The text holds no xpu-smi device row."""


def looks_like_xpu_smi(sample: Sample) -> bool:
    """xpu-smi discovery's ``Device ID | Device Information`` header."""
    return _SNIFF.search(sample.head) is not None


def parse_xpu_smi(sample: Sample) -> Imported:
    """Read ``xpu-smi discovery`` into GPUs.

    Raises :class:`XpuSmiError` when no device row is in the text.
    """
    lines = sample.text.splitlines()
    start = next((n for n, line in enumerate(lines) if _SNIFF.search(line)), 0)
    devices: dict[int, dict[str, str]] = {}
    current: int | None = None
    cut: str | None = None
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines[start + 1 :], start + 1):
        if not line.strip() or set(line.strip()) <= set("+-=|"):
            continue
        row = _ROW.match(line)
        if row is None:
            continue
        if row.group("id") is not None:
            current = int(row.group("id"))
            devices.setdefault(current, {})
        if current is None:
            continue
        devices[current].setdefault(row.group("key").strip(), row.group("value").strip())
        if number == last and line.lstrip().startswith("|") and not line.rstrip().endswith("|"):
            cut = f"the text ends inside the row of device {current} ({line.strip()[-40:]!r})"
    if not devices:
        raise XpuSmiError("no device row under 'Device ID | Device Information'")
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    for index in sorted(devices):
        keys = devices[index]
        printed = keys.get("Device Name")
        did = keys.get("PCI Device ID", "").lower().replace("0x", "")
        memory = _memory(keys.get("Memory Physical Size"))
        named = name_device(
            len(gpus),
            "intel",
            printed,
            pci_id=f"8086:{did}" if re.fullmatch(r"[0-9a-f]{4}", did) else None,
            memory_bytes=memory,
            source=SRC,
            tool="xpu-smi",
        )
        if keys.get("Device Type", "GPU").upper() != "GPU" or not is_compute_gpu(
            "intel", printed or "", named.known
        ):
            left_out.append(printed or f"device {index}")
            continue
        if named.note:
            notes.append(named.note)
        bdf = keys.get("PCI BDF Address")
        gpus.append(
            new_gpu(
                len(gpus),
                vendor="intel",
                backend="xpu",
                source=SRC,
                missing=MISSING,
                name=named.name,
                pci_bus_id=fact(bdf.lower() if bdf else None, SRC, MISSING),
                vram_total_bytes=fact(memory, SRC, "xpu-smi printed no memory size"),
                uuid=fact(keys.get("UUID") or None, SRC, MISSING),
            )
        )
    if not gpus:
        raise XpuSmiError(
            f"no discrete GPU among the devices xpu-smi lists ({'; '.join(left_out)}); "
            "paste `lspci -nn | grep -Ei 'vga|3d|display'` to list the GPUs on the PCI bus"
        )
    gpus, too_many = cap_gpus(gpus)
    left = left_out_note(left_out, "xpu-smi")
    if left:
        notes.append(left)
    driver = next(
        (d.get("Driver Version") for d in devices.values() if d.get("Driver Version")), None
    )
    if driver:
        notes.append(f"GPU driver {driver} (xpu-smi)")
    return Imported(empty_profile(gpus=gpus), truncated=too_many or cut, notes=notes)


def _memory(raw: str | None) -> int | None:
    match = _MEMORY.match((raw or "").strip())
    if match is None:
        return None
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    return value or None


FORMAT = Format(
    name="xpu-smi discovery",
    source=SRC,
    sniff=looks_like_xpu_smi,
    parse=parse_xpu_smi,
    rank=80,
    example="xpu-smi discovery",
)
