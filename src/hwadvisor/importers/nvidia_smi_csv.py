"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``: what scripts and inventory
tools collect. Each queried field is placed where ``nvidia-smi -q -x`` keeps it, and the XML
importer reads the tree: one reading of the facts for every nvidia-smi format.

With a header the columns are named; without one (``noheader``) they are recognised by what they
hold (a GPU name, ``81920 MiB``, a bus id, a ``GPU-`` UUID, a driver version). Units stripped by
``nounits`` are put back from the field's name.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hwadvisor.importers.base import MAX_GPUS, Imported, Sample, cap_gpus, empty_profile
from hwadvisor.importers.nvidia_smi_xml import NvidiaSmiXmlError, gpus_from_root
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import GpuInfo, NvmlInfo

__all__ = ["FORMAT", "looks_like_query_csv", "parse_query_csv"]

#: --query-gpu field → (where ``nvidia-smi -q -x`` keeps it, the unit ``nounits`` removed).
FIELDS: dict[str, tuple[str, str]] = {
    "name": ("product_name", ""),
    "gpu_name": ("product_name", ""),
    "uuid": ("uuid", ""),
    "gpu_uuid": ("uuid", ""),
    "serial": ("serial", ""),
    "gpu_serial": ("serial", ""),
    "pci.bus_id": ("pci/pci_bus_id", ""),
    "gpu_bus_id": ("pci/pci_bus_id", ""),
    "memory.total": ("fb_memory_usage/total", "MiB"),
    "memory.used": ("fb_memory_usage/used", "MiB"),
    "memory.free": ("fb_memory_usage/free", "MiB"),
    "temperature.gpu": ("temperature/gpu_temp", "C"),
    "utilization.gpu": ("utilization/gpu_util", "%"),
    "power.draw": ("gpu_power_readings/power_draw", "W"),
    "power.limit": ("gpu_power_readings/current_power_limit", "W"),
    "enforced.power.limit": ("gpu_power_readings/enforced_power_limit", "W"),
    "clocks.sm": ("clocks/sm_clock", "MHz"),
    "clocks.current.sm": ("clocks/sm_clock", "MHz"),
    "clocks.mem": ("clocks/mem_clock", "MHz"),
    "clocks.max.sm": ("max_clocks/sm_clock", "MHz"),
    "clocks.max.memory": ("max_clocks/mem_clock", "MHz"),
    "clocks.max.mem": ("max_clocks/mem_clock", "MHz"),
    "pcie.link.gen.current": ("pci/pci_gpu_link_info/pcie_gen/current_link_gen", ""),
    "pcie.link.gen.max": ("pci/pci_gpu_link_info/pcie_gen/max_link_gen", ""),
    "pcie.link.width.current": ("pci/pci_gpu_link_info/link_widths/current_link_width", "x"),
    "pcie.link.width.max": ("pci/pci_gpu_link_info/link_widths/max_link_width", "x"),
    "compute_cap": ("compute_cap", ""),
    "mig.mode.current": ("mig_mode/current_mig", ""),
    "ecc.mode.current": ("ecc_mode/current_ecc", ""),
    "persistence_mode": ("persistence_mode", ""),
}
_ROOT_FIELDS = {"driver_version": "driver_version", "count": "attached_gpus"}
_SKIP = {"index", "timestamp"}

#: A column of nvidia-smi's header: a field name (dotted, lower or camel case:
#: ``memory.total``, ``encoder.stats.sessionCount``) and its unit in brackets.
_HEADER_FIELD = re.compile(r"^([a-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?:\s*\[[^\]]*\])?$")
#: Columns that name one GPU: rows with the same value are samples of one GPU (``-l 1``).
_IDENTITY = ("uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "serial", "gpu_serial", "index")
#: The command line pasted above a ``noheader`` table names its columns.
_QUERY = re.compile(r"--query-gpu[= ]([A-Za-z0-9_.,]+)")
_GPU_NAME = re.compile(r"\b(NVIDIA|Tesla|GeForce|Quadro|TITAN|RTX|GRID)\b", re.IGNORECASE)
_MIB = re.compile(r"^\d+\s*MiB$")
_BUS = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_DRIVER = re.compile(r"^\d{3}\.\d{2,3}(?:\.\d{2})?$")


def _rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.split(",")]
        for line in text.splitlines()
        if line.strip() and "," in line and "--query-gpu" not in line
    ]


def _queried(text: str) -> list[str] | None:
    """The fields of a ``--query-gpu=...`` command line pasted with its output."""
    match = _QUERY.search(text)
    return [f for f in match.group(1).split(",") if f] if match else None


def _header(row: list[str]) -> list[str] | None:
    """The field names of a header line, or None when ``row`` is not one: every column a field
    name as nvidia-smi writes them, at least one the importer reads, and most of them known or
    dotted (a full header of a current driver has hundreds, most unknown here)."""
    names = []
    for cell in row:
        match = _HEADER_FIELD.match(cell.strip())
        if match is None:
            return None
        names.append(match.group(1))
    known = sum(1 for n in names if n in FIELDS or n in _ROOT_FIELDS or n in _SKIP)
    dotted = sum(1 for n in names if "." in n)
    if known < 1 or known + dotted < max(1, len(names) // 2):
        return None
    return names


def _guess(rows: list[list[str]]) -> list[str]:
    """Column names of a ``noheader`` table, from what the first row holds."""
    names = []
    for cell in rows[0]:
        if _MIB.match(cell):
            names.append("memory.total" if "memory.total" not in names else "memory.used")
        elif _BUS.match(cell):
            names.append("pci.bus_id")
        elif cell.startswith("GPU-"):
            names.append("uuid")
        elif _DRIVER.match(cell):
            names.append("driver_version")
        elif _GPU_NAME.search(cell):
            names.append("name")
        else:
            names.append("")
    return names


def looks_like_query_csv(text: str) -> bool:
    """A ``--query-gpu`` header line, or ``noheader`` rows that hold a GPU name."""
    rows = _rows(text)
    if not rows:
        return False
    if _header(rows[0]) is not None and len(rows[0]) >= 2:
        return True
    queried = _queried(text)
    if queried and any(len(r) == len(queried) for r in rows):
        return True
    widths = {len(r) for r in rows}
    return (
        len(widths) == 1
        and len(rows[0]) >= 2
        and "name" in _guess(rows)
        and ("memory.total" in _guess(rows) or "pci.bus_id" in _guess(rows))
    )


def _with_unit(value: str, unit: str) -> str:
    if not unit or not re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        return value
    return f"{value}{unit}" if unit == "x" else f"{value} {unit}"


def _put(parent: ET.Element, path: str, value: str) -> None:
    node = parent
    for part in path.split("/"):
        child = node.find(part)
        node = child if child is not None else ET.SubElement(node, part)
    node.text = value


def parse_query_csv(text: str) -> tuple[NvmlInfo, list[GpuInfo]]:
    """Read the table. Raises :class:`NvidiaSmiXmlError` when no row names a GPU."""
    return _parse(text)[:2]


def _parse(text: str) -> tuple[NvmlInfo, list[GpuInfo], list[str]]:
    """The table's GPUs, and notes on how it was read: a header repeated (several runs pasted)
    starts another block of the same GPUs; rows of one GPU (the same UUID, bus id or index, or
    the same place in each block) are samples of it, folded into one GPU."""
    rows = _rows(text)
    if not rows:
        raise NvidiaSmiXmlError("no comma-separated rows in the nvidia-smi --query-gpu output")
    names = _header(rows[0])
    if names is not None:
        rows = rows[1:]
    else:
        names = _queried(text) or _guess(rows)
    root = ET.Element("nvidia_smi_log")
    identity = next((names.index(n) for n in _IDENTITY if n in names), None)
    seen: dict[str, int] = {}  # a GPU's identity → its samples
    block = 0  # rows since the last header: a GPU's place in its block
    headers = 0
    for row in rows:
        header = _header(row)
        if header is not None:
            headers += 1
            names, block = header, 0
            identity = next((names.index(n) for n in _IDENTITY if n in names), None)
            continue
        if len(row) != len(names):
            continue  # a row cut off, or another table's line
        key = row[identity] if identity is not None else (f"#{block}" if headers else None)
        block += 1
        if key is not None and key in seen:
            seen[key] += 1
            continue
        if len(root.findall("gpu")) >= MAX_GPUS:
            break
        if key is not None:
            seen[key] = 1
        gpu = ET.SubElement(root, "gpu")
        for name, value in zip(names, row, strict=True):
            if name in _ROOT_FIELDS:
                if root.find(_ROOT_FIELDS[name]) is None:
                    ET.SubElement(root, _ROOT_FIELDS[name]).text = value
            elif name in FIELDS:
                path, unit = FIELDS[name]
                _put(gpu, path, _with_unit(value, unit))
    if not root.findall("gpu"):
        raise NvidiaSmiXmlError("no GPU rows in the nvidia-smi --query-gpu output")
    notes = []
    if headers:
        notes.append(f"the header is repeated {headers} time(s): one table per run, read once")
    sampled = [count for count in seen.values() if count > 1]
    if sampled:
        notes.append(
            f"{sum(sampled)} rows are {len(sampled)} GPU(s) sampled {max(sampled)} times "
            "(same UUID, bus id or index): read as one GPU each"
        )
    nvml, gpus = gpus_from_root(root)
    return nvml, gpus, notes


def _import(sample: Sample) -> Imported:
    nvml, gpus, notes = _parse(sample.text)
    rows = len(_rows(sample.text))
    too_many = cap_gpus(list(range(rows)))[1] if len(gpus) >= MAX_GPUS < rows else None
    return Imported(empty_profile(nvml=nvml, gpus=gpus), truncated=too_many, notes=notes)


FORMAT = Format(
    name="nvidia-smi --query-gpu CSV",
    source=Source.NVIDIA_SMI,
    sniff=lambda sample: looks_like_query_csv(sample.head),
    parse=_import,
    rank=80,
    example="nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv",
)
