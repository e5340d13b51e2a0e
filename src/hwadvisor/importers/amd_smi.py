"""``amd-smi`` output: ``amd-smi static`` and ``amd-smi list`` (and ``amd-smi metric``), as
text or ``--json``, and the bordered table plain ``amd-smi`` prints (ROCm 7).

The text is YAML-like: a ``GPU: 0`` line at the left, then indented sections (``ASIC:``,
``BUS:``, ``VRAM:``, ``DRIVER:``, ``BOARD:``, ``LIMIT:`` ...) of ``KEY: value`` lines. ``CPU: n``
and ``AI_NIC: n`` blocks (an MI300A, a Pensando NIC) are left out. Blocks of one GPU from
several commands in one paste (``amd-smi list`` then ``amd-smi static``) are read as one GPU.

``--json`` is the same tree in lower case, as a list of ``{"gpu": 0, ...}`` objects (ROCm 6.0
to 6.3) or under ``{"gpu_data": [...]}`` (later), with values either plain (``"64289 MB"``,
``300``) or ``{"value": 300, "unit": "W"}``.

The table has two rows per GPU (``| BDF  GPU-Name | Mem-Uti Temp UEC Power-Usage |`` then ``|
GPU HIP-ID OAM-ID Partition-Mode | GFX-Uti Fan Mem-Usage |``): bus id and market name, power
draw and cap, then index, partition mode and VRAM used / total in MB; they are read into the
same tree as the text's sections. The banner (``AMD-SMI 26.0.2 amdgpu version: ... ROCm version:
7.0.2``) gives the driver and ROCm versions.

Names follow :func:`hwadvisor.importers.rocm_smi.name_amd_gpu`: MARKET_NAME when the catalog
knows it, else the catalog row of DEVICE_ID, else of the gfx target and VRAM size. VRAM
``SIZE`` is in MiB (amd-smi writes "MB": 196592 MB on a 192 GB MI300X).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.importers.base import Imported, ImportFormatError, Sample, empty_profile, new_gpu
from hwadvisor.importers.registry import Format
from hwadvisor.importers.rocm_smi import (
    NO_CUDA_CAPABILITY,
    device_id,
    name_amd_gpu,
    normalize_gfx_target,
    present,
)
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, PlatformInfo

SRC = Source.AMD_SMI
MISSING = "not in the amd-smi output"

_SECTIONS = (
    r"ASIC|BUS|BDF|UUID|VRAM|DRIVER|BOARD|LIMIT|VBIOS|IFWI|KFD_ID|NODE_ID|USAGE|POWER|"
    r"MEM_USAGE|TEMPERATURE|CLOCK|RAS|PARTITION|NUMA|CACHE_INFO"
)
_TEXT_SNIFF = re.compile(rf"(?m)^[ \t]*GPU:[ \t]*\d+[ \t]*\n[ \t]+(?:{_SECTIONS}):")
_JSON_SNIFF = re.compile(r'"gpu_data"\s*:\s*\[|"gpu"\s*:\s*\d+\s*,\s*"(?:asic|bdf|bus|uuid)"\s*:')
#: Where a JSON document starts: the first line, or one after a prompt line.
_JSON_START = re.compile(r"(?m)^\s*[\[{]")
_GPU_LINE = re.compile(r"^([ \t]*)GPU:[ \t]*(\d+)[ \t]*$")
_KEY_LINE = re.compile(r"^([ \t]*)([A-Za-z0-9_][A-Za-z0-9_ .]*?):(?:[ \t]+(.*?))?[ \t]*$")
_TABLE_SNIFF = re.compile(r"(?m)^\|\s*BDF\s+GPU-Name\s*\|")
#: A table GPU's first row: bus id, name | memory busy, temperature, UEC, power used/cap.
_TABLE_ROW1 = re.compile(
    r"^\|\s*([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S[^|]*?)\s*\|(.*?)\|?\s*$"
)
#: Its second row: index, HIP id, OAM id, partition mode | GFX busy, fan, VRAM used/total.
_TABLE_ROW2 = re.compile(r"^\|\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*\|(.*?)\|?\s*$")
_TABLE_BANNER = re.compile(r"amdgpu version:\s*([0-9][\w.-]*)")
_TABLE_BOTTOM = re.compile(r"^\+-+\+-+\+\s*$")
_REQUESTED = re.compile(r"amd-smi\s+(?:static|list|metric)\b[^\n]*?(?:-g|--gpu)\s+((?:\d+\s*)+)")
_ROCM_VERSION = re.compile(r"ROCm version:\s*([0-9][0-9.]*)")


class AmdSmiError(ImportFormatError):
    """The text holds no GPU amd-smi described."""


def looks_like_amd_smi(sample: Sample) -> bool:
    """A ``GPU: n`` line followed by an indented amd-smi section, amd-smi's JSON, or the
    header of its default table."""
    head = sample.head
    return (
        _TEXT_SNIFF.search(head) is not None
        or _TABLE_SNIFF.search(head) is not None
        or (_JSON_SNIFF.search(head) is not None and _JSON_START.search(head) is not None)
    )


@dataclass
class _Read:
    gpus: dict[int, dict[str, Any]] = field(default_factory=dict)
    cut: str | None = None

    def gpu(self, index: int) -> dict[str, Any]:
        return self.gpus.setdefault(index, {})


def parse_amd_smi(sample: Sample) -> Imported:
    """Read ``amd-smi static`` / ``list`` / ``metric`` output (text or JSON) into GPUs.

    Raises :class:`AmdSmiError` when no ``GPU: n`` block (or JSON entry) is in it.
    """
    read = _Read()
    document = sample.json
    if document is not None and _entries(document):
        for entry in _entries(document):
            index = entry.get("gpu")
            if isinstance(index, int) and not isinstance(index, bool):
                _merge(read.gpu(index), _tree(entry))
        read.cut = sample.json_cut
    else:
        _read_text(sample.text, read)
    notes: list[str] = []
    if not read.gpus and _TABLE_SNIFF.search(sample.text):
        _read_table(sample.text, read, notes)
    if not read.gpus:
        raise AmdSmiError("no 'GPU: n' block or GPU table row in the amd-smi output")
    rocm = _ROCM_VERSION.search(sample.head)
    if rocm:
        notes.append(f"ROCm {rocm.group(1)} (amd-smi version line)")
    gpus = [_gpu(index, read.gpus[index], notes) for index in sorted(read.gpus)]
    drivers = sorted({v for tree in read.gpus.values() if (v := _driver(tree))})
    if drivers:
        notes.insert(0, f"amdgpu driver version {', '.join(drivers)} (amd-smi DRIVER)")
    kernels = {k for tree in read.gpus.values() if (k := _kernel(tree))}
    sections: dict[str, Any] = {"gpus": gpus}
    if len(kernels) == 1:
        sections["platform"] = PlatformInfo(kernel=fact(kernels.pop(), SRC))
    return Imported(empty_profile(**sections), truncated=read.cut, notes=notes)


# --------------------------------------------------------------------------------------------
# JSON


def _entries(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, dict) and isinstance(document.get("gpu_data"), list):
        document = document["gpu_data"]
    elif isinstance(document, dict) and "gpu" in document:
        document = [document]
    if not isinstance(document, list):
        return []
    return [entry for entry in document if isinstance(entry, dict) and "gpu" in entry]


def _tree(obj: dict[str, Any]) -> dict[str, Any]:
    """A JSON entry as the text's tree: upper-case keys, ``{"value", "unit"}`` as "value unit"."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = str(key).upper()
        if isinstance(value, dict) and "value" in value:
            unit = value.get("unit")
            out[name] = f"{value['value']} {unit}".strip() if unit else str(value["value"])
        elif isinstance(value, dict):
            out[name] = _tree(value)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            out[name] = str(value)
    return out


def _merge(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)


# --------------------------------------------------------------------------------------------
# Text


def _read_text(text: str, read: _Read) -> None:
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    i = 0
    while i < len(lines):
        start = _GPU_LINE.match(lines[i])
        if start is None:
            i += 1
            continue
        indent, index = len(start.group(1).expandtabs()), int(start.group(2))
        stack: list[tuple[int, dict[str, Any]]] = [(indent, read.gpu(index))]
        section = "its first section"
        i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            width = len(line) - len(line.lstrip())
            if width <= indent:
                break
            match = _KEY_LINE.match(line)
            if match is None:
                if i == last:
                    where = f"GPU {index}'s {section}"
                    read.cut = read.cut or f"the text ends inside {where} ({line.strip()!r})"
                i += 1
                continue
            while len(stack) > 1 and stack[-1][0] >= width:
                stack.pop()
            key, value = match.group(2).strip().upper(), match.group(3)
            parent = stack[-1][1]
            if value:
                parent.setdefault(key, value)
            else:
                node = parent.setdefault(key, {})
                if isinstance(node, dict):
                    stack.append((width, node))
                    if len(stack) == 2:
                        section = f"{key} section"
            i += 1
    requested = _REQUESTED.search(text)
    if read.cut is None and requested:
        wanted = [int(n) for n in requested.group(1).split()]
        missing = [n for n in wanted if n not in read.gpus]
        if missing and len(missing) < len(wanted):
            shown = ", ".join(map(str, missing))
            read.cut = f"GPU {shown} of the {len(wanted)} the command asked for is not in the text"


# --------------------------------------------------------------------------------------------
# The table plain amd-smi prints


def _read_table(text: str, read: _Read, notes: list[str]) -> None:
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if _TABLE_SNIFF.search(line)), 0)
    first: tuple[str, str, str] | None = None
    partitions: set[str] = set()
    bottom = False
    for line in lines[start + 1 :]:
        if _TABLE_BOTTOM.match(line.strip()):
            bottom = True
            break
        row2 = _TABLE_ROW2.match(line)
        if first is not None and row2:
            bdf, name, right1 = first
            index = int(row2.group(1))
            tree = read.gpu(index)
            power = re.search(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\s*W", right1)
            temp = re.search(r"(\d+(?:\.\d+)?)\s*°?C\b", right1)
            vram = re.search(r"(\d+)\s*/\s*(\d+)\s*MB", row2.group(5))
            busy = re.match(r"\s*(\d+)\s*%", row2.group(5))
            tree.setdefault("BUS", {})["BDF"] = bdf
            tree.setdefault("ASIC", {})["MARKET_NAME"] = name
            if power:
                tree.setdefault("POWER", {})["SOCKET_POWER"] = f"{power.group(1)} W"
                tree.setdefault("LIMIT", {})["SOCKET_POWER"] = f"{power.group(2)} W"
            if temp:
                tree.setdefault("TEMPERATURE", {})["HOTSPOT"] = f"{temp.group(1)} C"
            if vram:
                tree.setdefault("VRAM", {})["SIZE"] = f"{vram.group(2)} MB"
                tree.setdefault("MEM_USAGE", {})["USED_VRAM"] = f"{vram.group(1)} MB"
            if busy:
                tree.setdefault("USAGE", {})["GFX_ACTIVITY"] = f"{busy.group(1)} %"
            if row2.group(4) not in ("N/A", "-") and "/" in row2.group(4):
                partitions.add(row2.group(4))
            first = None
            continue
        row1 = _TABLE_ROW1.match(line)
        if row1:
            first = (row1.group(1).lower(), row1.group(2).strip(), row1.group(3))
    if first is not None:
        read.cut = f"the text ends inside the rows of the GPU at {first[0]}"
    elif read.gpus and not bottom:
        last = max(read.gpus)
        read.cut = f"the text ends after GPU {last}, before the GPU table's closing border"
    driver = _TABLE_BANNER.search(text)
    if driver:
        notes.append(f"amdgpu driver version {driver.group(1)} (amd-smi banner)")
    spx = {p for p in partitions if not p.upper().startswith("SPX")}
    if spx:
        notes.append(
            f"partition mode {', '.join(sorted(partitions))}: each GPU the table lists may be a "
            "partition of a physical GPU"
        )


# --------------------------------------------------------------------------------------------
# One GPU


def _get(tree: dict[str, Any], *path: str) -> str | None:
    node: Any = tree
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return present(node) if isinstance(node, str) else None


def _driver(tree: dict[str, Any]) -> str | None:
    version = _get(tree, "DRIVER", "VERSION") or _get(tree, "DRIVER", "DRIVER_VERSION")
    if version and version.startswith("Linuxversion"):
        # An in-kernel amdgpu: amd-smi prints /proc/version with its spaces taken out.
        return None
    return version


def _kernel(tree: dict[str, Any]) -> str | None:
    kernel = _get(tree, "DRIVER", "OS_KERNEL_VERSION")
    if kernel:
        return kernel
    version = _get(tree, "DRIVER", "VERSION") or ""
    match = re.match(r"Linuxversion(\S+?)\(", version)
    return match.group(1) if match else None


def _quantity(value: str | None, units: dict[str, float]) -> float | None:
    """``"64289 MB"`` → 64289 * units["MB"]; a bare number is taken in the first unit."""
    if value is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z/°]*)", value.strip())
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2)
    scale = units.get(unit.upper()) if unit else next(iter(units.values()))
    return None if scale is None else number * scale


def _measure(value: str | None, units: dict[str, float], what: str) -> Fact[Any]:
    if value is None:
        return unknown(f"amd-smi printed no {what}", SRC)
    number = _quantity(value, units)
    if number is None:
        return unknown(f"unparseable {what} {value!r} in the amd-smi output", SRC)
    return fact(number, SRC)


_MEMORY = {"MB": 2.0**20, "MIB": 2.0**20, "GB": 2.0**30, "GIB": 2.0**30, "KB": 2.0**10, "B": 1.0}
_WATTS = {"W": 1.0}
_CELSIUS = {"C": 1.0, "°C": 1.0}
_PERCENT = {"%": 1.0}


def _gpu(index: int, tree: dict[str, Any], notes: list[str]) -> GpuInfo:
    known: dict[str, Any] = {}
    total = _quantity(_get(tree, "VRAM", "SIZE") or _get(tree, "VRAM", "VRAM_SIZE"), _MEMORY)
    if total is None:
        total = _quantity(_get(tree, "MEM_USAGE", "TOTAL_VRAM"), _MEMORY)
    memory = int(total) if total else None
    if memory:
        known["vram_total_bytes"] = fact(memory, SRC)
    used = _quantity(_get(tree, "MEM_USAGE", "USED_VRAM"), _MEMORY)
    if used is not None:
        known["vram_used_bytes"] = fact(int(used), SRC)
        if memory:
            known["vram_free_bytes"] = fact(max(memory - int(used), 0), Source.DERIVED)
    target = normalize_gfx_target(_get(tree, "ASIC", "TARGET_GRAPHICS_VERSION"))
    if target:
        known["architecture"] = fact(target, SRC)
    did = device_id(_get(tree, "ASIC", "DEVICE_ID"))
    name, note = name_amd_gpu(
        index,
        [_get(tree, "ASIC", "MARKET_NAME"), _get(tree, "BOARD", "PRODUCT_NAME")],
        device_ids=[did] if did else [],
        target=target,
        memory_bytes=memory,
        source=SRC,
        tool="amd-smi",
    )
    known["name"] = name
    if note:
        notes.append(note)
    bdf = _get(tree, "BUS", "BDF") or _get(tree, "BDF")
    if bdf:
        known["pci_bus_id"] = fact(bdf.lower(), SRC)
    uuid = _get(tree, "UUID") or _get(tree, "ASIC", "UUID")
    if uuid:
        known["uuid"] = fact(uuid, SRC)
    serial = _get(tree, "BOARD", "PRODUCT_SERIAL")
    if serial and serial != "0":
        known["serial"] = fact(serial, SRC)
    units = _get(tree, "ASIC", "NUM_COMPUTE_UNITS")
    if units and units.isdigit():
        known["multiprocessor_count"] = fact(int(units), SRC)
    width = _get(tree, "BUS", "MAX_PCIE_WIDTH")
    if width and width.isdigit():
        known["pcie_width_max"] = fact(int(width), SRC)
    generation = re.fullmatch(r"Gen\s*(\d)", _get(tree, "BUS", "PCIE_INTERFACE_VERSION") or "")
    if generation:
        known["pcie_generation_max"] = fact(int(generation.group(1)), SRC)
    cap = _get(tree, "LIMIT", "SOCKET_POWER") or _get(tree, "LIMIT", "PPT0", "SOCKET_POWER_LIMIT")
    known["power_limit_watts"] = _measure(cap, _WATTS, "power cap")
    known["power_draw_watts"] = _measure(_get(tree, "POWER", "SOCKET_POWER"), _WATTS, "power draw")
    temperature = _get(tree, "TEMPERATURE", "EDGE") or _get(tree, "TEMPERATURE", "HOTSPOT")
    measured = _measure(temperature, _CELSIUS, "temperature")
    known["temperature_c"] = (
        fact(round(measured.value), SRC) if measured.value is not None else measured
    )
    busy = _measure(_get(tree, "USAGE", "GFX_ACTIVITY"), _PERCENT, "utilisation")
    known["utilization_percent"] = fact(round(busy.value), SRC) if busy.value is not None else busy
    known["compute_capability"] = unknown(NO_CUDA_CAPABILITY, SRC)
    return new_gpu(index, vendor="amd", backend="rocm", source=SRC, missing=MISSING, **known)


def _near(sample: Sample) -> str | None:
    if re.search(r"(?m)^GPU:\s*\d+\s*$", sample.head) and not looks_like_amd_smi(sample):
        return "looks like amd-smi output but no 'GPU: n' block has an indented section"
    return None


FORMAT = Format(
    name="amd-smi output",
    source=SRC,
    sniff=looks_like_amd_smi,
    parse=parse_amd_smi,
    rank=90,
    near=_near,
    example="amd-smi static",
)
