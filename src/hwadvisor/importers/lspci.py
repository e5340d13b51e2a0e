"""``lspci`` output: the display controllers on the PCI bus (``lspci``, ``lspci -nn``,
``lspci -v``/``-k``, and ``lspci | grep -i nvidia``).

One line per device: ``01:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev
a1)``; ``-nn`` adds the class and ``[vendor:device]`` ids, ``-v`` and ``-k`` indented lines
below it (``Kernel driver in use: nvidia``). VGA compatible, 3D and Display controllers are read;
so are Processing accelerators (where lspci puts an Instinct MI200/MI300); the rest (bridges,
audio functions) is left out. A GPU is named from the bracketed product name
when the catalog knows it, else from its PCI id (an older ``pci.ids`` prints only ``Device
0bda``). lspci states no memory, no driver version and no model of an unnamed id.
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
from hwadvisor.importers.devicenames import (
    BACKENDS,
    PCI_VENDORS,
    is_compute_gpu,
    left_out_note,
    name_device,
    product_name,
    vendor_of,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuInfo

SRC = Source.LSPCI
MISSING = "not in lspci output"

#: ``0000:01:00.0 3D controller [0302]: NVIDIA Corporation ...`` (domain and class optional).
_LINE = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<cls>VGA compatible controller|3D controller|Display controller|Processing accelerators)"
    r"(?:\s*\[(?P<class_id>(?:03|12)[0-9a-fA-F]{2})\])?:\s*(?P<desc>.*)$"
)
#: Any device line (a bridge, an audio function): where a verbose block ends.
_ANY_DEVICE = re.compile(r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+\S")
_IDS = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_TAIL = re.compile(r"\s*(?:\(rev [0-9a-fA-F]+\))?\s*(?:\(prog-if [^)]*\))?\s*$")
#: Accelerators hwadvisor does not model, as lspci lists them (class "Processing accelerators"
#: or "Co-processor"; the vendor names them): Habana/Intel Gaudi, Huawei Ascend, Google TPU.
_ACCELERATOR = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?:Processing accelerators|Co-processor|Non-VGA unclassified device|"
    r"Unassigned class)(?:\s*\[[0-9a-fA-F]{4}\])?:\s*(?P<desc>.*"
    r"(?:Habana|Gaudi|Huawei|Ascend|Google).*)$"
)
_ACCELERATOR_KINDS = (
    (re.compile(r"Habana|Gaudi", re.I), "Habana Gaudi"),
    (re.compile(r"Huawei|Ascend", re.I), "Huawei Ascend"),
    (re.compile(r"Google", re.I), "Google TPU"),
)
_VERBOSE = re.compile(r"^\s+(?:Subsystem|Flags|Control|Kernel driver in use|Kernel modules):")
_DRIVER = re.compile(r"^\s+Kernel driver in use:\s*(\S+)")
_BLOCK_END = re.compile(r"^\s+(?:Kernel driver in use|Kernel modules):")


class LspciError(ImportFormatError):
    """The text holds no display controller line."""


def looks_like_lspci(sample: Sample) -> bool:
    """A line lspci prints for a VGA, 3D or Display controller, or for an accelerator."""
    return any(_LINE.match(line) or _ACCELERATOR.match(line) for line in sample.head.splitlines())


def _vendor_and_device(desc: str) -> tuple[str | None, str | None, str | None]:
    """(vendor, vendor id, device id) of a device description."""
    ids = _IDS.findall(desc)
    if ids:
        vid, did = ids[-1]
        return PCI_VENDORS.get(vid.lower(), vid.lower()), vid.lower(), did.lower()
    vendor = vendor_of(desc)
    bare = re.search(r"\bDevice ([0-9a-fA-F]{4})\b", desc)
    vid = next((k for k, v in PCI_VENDORS.items() if v == vendor), None)
    return vendor, vid, bare.group(1).lower() if bare else None


def _printed_name(desc: str, device_id: str | None) -> str | None:
    text = _IDS.sub("", desc)
    text = _TAIL.sub("", text).strip()
    product = product_name(text)
    if product:
        return product
    if re.search(r"\bDevice$", text) and device_id:
        return f"Device {device_id}"  # "Intel Corporation Device [8086:3e9b]" under -nn
    bare = re.search(r"\bDevice [0-9a-fA-F]{4}\b", text)
    if bare:
        return bare.group(0)
    # "ASPEED Technology, Inc. ASPEED Graphics Family": the text after the vendor's name.
    parts = re.split(r"(?:Corporation|Inc\.|Ltd\.?|Co\.)\s+", text, maxsplit=1)
    return parts[-1].strip() or None


def parse_lspci(sample: Sample) -> Imported:
    """Read lspci's display controllers into GPUs.

    Raises :class:`LspciError` when no display controller line is in the text.
    """
    lines = sample.text.splitlines()
    found: list[tuple[str, str, list[str]]] = []  # (bus, description, indented lines)
    accelerators: list[str] = []
    current: list[str] | None = None
    verbose = False
    for line in lines:
        accelerator = _ACCELERATOR.match(line)
        if accelerator:
            accelerators.append(accelerator.group("desc"))
            current = None
            continue
        match = _LINE.match(line)
        if match:
            current = []
            found.append((match.group("bus").lower(), match.group("desc"), current))
            continue
        if _ANY_DEVICE.match(line):
            current = None
            continue
        if current is not None and line[:1] in (" ", "\t") and line.strip():
            current.append(line)
            verbose = verbose or bool(_VERBOSE.match(line))
    unmodelled = _unmodelled(accelerators)
    if not found and unmodelled:
        return Imported(empty_profile(), unmodelled=unmodelled)
    if not found:
        raise LspciError(
            "no 'VGA compatible controller', '3D controller' or 'Display controller' line"
        )
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    drivers: list[str] = []
    for bus, desc, block in found:
        vendor, vid, did = _vendor_and_device(desc)
        printed = _printed_name(desc, did)
        pci_id = f"{vid}:{did}" if vid and did else None
        named = name_device(
            len(gpus),
            vendor or "",
            printed,
            pci_id=pci_id,
            memory_bytes=None,
            source=SRC,
            tool="lspci",
        )
        if not is_compute_gpu(vendor, desc, named.known):
            left_out.append(f"{bus} {printed or desc.strip()}")
            continue
        if named.note:
            notes.append(named.note)
        driver = next((m.group(1) for raw in block if (m := _DRIVER.match(raw))), None)
        if driver:
            drivers.append(driver)
        gpus.append(_gpu(len(gpus), vendor or "unknown", bus, named.name))
    if not gpus and unmodelled:
        note = left_out_note(left_out, "lspci")
        return Imported(empty_profile(), unmodelled=unmodelled, notes=[note] if note else [])
    if not gpus:
        shown = "; ".join(left_out)
        raise LspciError(
            f"no compute GPU among the display devices lspci lists ({shown}); if this "
            "machine has "
            "one, paste `lspci -nn | grep -Ei 'vga|3d|display'` from it, or `nvidia-smi -q`"
        )
    gpus, too_many = cap_gpus(gpus)
    if drivers:
        notes.append(f"kernel driver in use: {', '.join(dict.fromkeys(drivers))} (lspci -k)")
    left = left_out_note(left_out, "lspci")
    if left:
        notes.append(left)
    notes.append("lspci states no GPU memory or driver version")
    cut = too_many or _cut(found, verbose, lines)
    return Imported(empty_profile(gpus=gpus), truncated=cut, notes=notes, unmodelled=unmodelled)


def _unmodelled(accelerators: list[str]) -> str | None:
    """ "lspci lists 8 Habana Gaudi accelerators (...)" for the accelerator lines, or None."""
    counts: dict[str, list[str]] = {}
    for desc in accelerators:
        kind = next((k for pattern, k in _ACCELERATOR_KINDS if pattern.search(desc)), None)
        if kind:
            counts.setdefault(kind, []).append(_TAIL.sub("", desc).strip())
    if not counts:
        return None
    parts = [
        f"{len(items)} {kind} accelerator{'s' if len(items) > 1 else ''} "
        f"({'; '.join(dict.fromkeys(items))}; lspci states no memory)"
        for kind, items in counts.items()
    ]
    return "lspci lists " + ", ".join(parts)


def _gpu(index: int, vendor: str, bus: str, name: object) -> GpuInfo:
    if bus.count(":") == 1:
        bus = f"0000:{bus}"
    return new_gpu(
        index,
        vendor=vendor,
        backend=BACKENDS.get(vendor, "unknown"),
        source=SRC,
        missing=MISSING,
        name=name,
        pci_bus_id=fact(bus, SRC),
    )


def _cut(found: list[tuple[str, str, list[str]]], verbose: bool, lines: list[str]) -> str | None:
    """Where verbose output (``-v``, ``-k``) stops inside a device's block: every block ends
    with the kernel driver lines, and the text's last line is indented."""
    if not verbose or not found:
        return None
    bus, _, block = found[-1]
    last = next((line for line in reversed(lines) if line.strip()), "")
    if block and last in block and not any(_BLOCK_END.match(line) for line in block):
        return f"the text ends inside the verbose block of {bus} ({last.strip()[:40]!r})"
    return None


def _near(sample: Sample) -> str | None:
    if re.search(r"(?m)^\S+\s+(?:VGA|3D|Display)\b", sample.head) and re.search(
        r"\blspci\b", sample.head
    ):
        return "looks like lspci output but no line is a 'VGA/3D/Display controller' device line"
    return None


FORMAT = Format(
    name="lspci output",
    source=SRC,
    sniff=looks_like_lspci,
    parse=parse_lspci,
    rank=30,
    near=_near,
    example="lspci -nn",
)
