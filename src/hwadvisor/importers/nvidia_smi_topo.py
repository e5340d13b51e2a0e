"""``nvidia-smi topo -m``: how the GPUs of one machine are joined to each other.

The matrix has a header line (``GPU0 GPU1 ... NIC0 ... CPU Affinity NUMA Affinity GPU NUMA ID``;
older drivers name the NICs by device, ``mlx4_0``, and print no NUMA columns), one row per GPU,
then one per NIC, then a legend (and, with NICs, a NIC legend). Each cell says how two devices
are joined: ``X`` itself, ``NV#`` a bonded set of # NVLinks, else the PCIe path (``PIX`` one
bridge, ``PXB`` several, ``PHB`` the host bridge, ``NODE`` host bridges within a NUMA node,
``SYS`` across NUMA nodes; ``SOC`` is the older drivers' ``SYS``).

The matrix says nothing of the GPUs themselves: it gives one GPU record per GPU column (names
unknown) and one :class:`~hwadvisor.model.profile.GpuLink` per pair of GPUs, in the NVML probe's
vocabulary; a pair whose cell the text is cut before is ``unknown``, with the reason. CPU
affinity and the NICs go to the import notes; a matrix or legend cut short is reported. vLLM's
collect_env prints the same matrix under "GPU Topology:"; :func:`read_topology` serves both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwadvisor.importers.base import (
    MAX_GPUS,
    Imported,
    ImportFormatError,
    Sample,
    empty_profile,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuLink

SRC = Source.NVIDIA_SMI
MISSING = "not in nvidia-smi topo -m"

#: The PCIe path cells, as the NVML probe names the same levels.
PCIE_LEVELS = {
    "PIX": "pcie_switch",
    "PXB": "pcie_switches",
    "PHB": "host_bridge",
    "NODE": "numa_node",
    "SYS": "system",
    "SOC": "system",
}
_NVLINK = re.compile(r"^NV(\d+)$")
_GPU = re.compile(r"^GPU(\d+)$")
#: A header line, then (blank lines allowed) GPU0's row, which starts with "X".
_MATRIX = re.compile(
    r"(?m)^[ \t]*GPU0[ \t]+(?!X[ \t\r]|X$)\S[^\n]*\n(?:[ \t]*\n)*[ \t]*GPU0[ \t]+X(?:[ \t]|$)"
)
_CPU_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
_NIC_LEGEND = re.compile(r"(?m)^\s*(NIC\d+):\s*(\S+)\s*$")
_LEGEND_END = re.compile(r"(?m)^\s*NV#\s*=\s*Connection traversing a bonded set of # NVLinks\s*$")
_OLD_LEGEND_END = r"PIX\s*=\s*Connection traversing .*(?:bridge|switch)$"
_NVLINK_PCIE = "PCIe path not shown: nvidia-smi topo -m prints the NVLink where one joins the GPUs"


class NvidiaSmiTopoError(ImportFormatError):
    """The text holds no ``nvidia-smi topo -m`` matrix."""


@dataclass
class Topology:
    """What a ``topo -m`` matrix says: the GPU count, the links, and how much of it is there."""

    gpu_count: int
    links: list[GpuLink]
    truncated: str | None = None
    notes: list[str] = field(default_factory=list)


def looks_like_topo(text: str) -> bool:
    """A matrix header line followed by GPU0's row, which starts with ``X``."""
    return _MATRIX.search(text) is not None


def read_topology(text: str) -> Topology | None:
    """The first ``topo -m`` matrix in ``text`` (read up to a cut), or None when there is none."""
    match = _MATRIX.search(text)
    if match is None:
        return None
    lines = text[match.start() :].split("\n")
    header = lines[0].split()
    columns = 0
    while columns < len(header) and header[columns] == f"GPU{columns}":
        columns += 1
    nic_columns = _nic_columns(header[columns:])
    gpu_count = min(columns, MAX_GPUS)
    rows: dict[int, list[str]] = {}
    nic_rows = 0
    legend = False
    last_row: int | None = None  # the GPU row the text ends with, if it does
    for line in lines[1:]:
        tokens = line.split()
        if not tokens:
            continue
        last_row = None
        if tokens[0].startswith("Legend"):
            legend = True
            break
        label = _GPU.match(tokens[0])
        if label is not None and int(label.group(1)) < gpu_count:
            last_row = int(label.group(1))
            rows.setdefault(last_row, tokens[1:])
        elif tokens[0] in nic_columns or tokens[0].startswith("NIC"):
            nic_rows += 1
        else:
            break  # the matrix is over: what follows is something else
    truncated = (
        (
            f"{columns} GPU columns, more than one machine has: the first {MAX_GPUS} are read"
            if columns > MAX_GPUS
            else None
        )
        or _cut(gpu_count, rows, len(nic_columns), nic_rows, legend)
        or _legend_cut(text[match.start() :], nic_columns)
    )
    # A cut matrix that ends with a GPU row may end inside its CPU affinity ("0-23,4").
    whole = {i: r for i, r in rows.items() if not (truncated and i == last_row)}
    return Topology(
        gpu_count=gpu_count,
        links=_links(gpu_count, rows),
        truncated=truncated,
        notes=_notes(text, gpu_count, whole, nic_columns),
    )


def _nic_columns(tokens: list[str]) -> list[str]:
    """The NIC columns of the header: everything between the GPUs and "CPU Affinity"."""
    columns: list[str] = []
    for token in tokens:
        if token in ("CPU", "NUMA", "GPU"):
            break
        # A paste that lost a tab between two names ("NIC8NIC9") still has both columns.
        merged = re.fullmatch(r"(?:NIC\d+){2,}", token)
        columns += re.findall(r"NIC\d+", token) if merged else [token]
    return columns


def _cell(rows: dict[int, list[str]], a: int, b: int) -> str | None:
    """How GPU ``a`` and GPU ``b`` are joined: ``a``'s row, else ``b``'s (the matrix is
    symmetric), or None when both rows are cut before that column."""
    for row, column in ((a, b), (b, a)):
        cells = rows.get(row)
        if cells is not None and column < len(cells):
            return cells[column]
    return None


def _links(gpu_count: int, rows: dict[int, list[str]]) -> list[GpuLink]:
    links = []
    for a in range(gpu_count):
        for b in range(a + 1, gpu_count):
            links.append(_link(a, b, _cell(rows, a, b)))
    return links


def _link(a: int, b: int, cell: str | None) -> GpuLink:
    if cell is None:
        reason = f"the text is cut before the GPU{a}/GPU{b} cell of the matrix"
        return GpuLink(gpu_a=a, gpu_b=b, link="unknown", reason=reason)
    nvlink = _NVLINK.match(cell)
    if nvlink is not None:
        count = int(nvlink.group(1))
        return GpuLink(gpu_a=a, gpu_b=b, link="nvlink", nvlink_count=count, reason=_NVLINK_PCIE)
    level = PCIE_LEVELS.get(cell)
    if level is not None:
        return GpuLink(gpu_a=a, gpu_b=b, link=level, pcie_link=level)
    reason = f"nvidia-smi topo -m prints {cell!r} for GPU{a}/GPU{b}"
    return GpuLink(gpu_a=a, gpu_b=b, link="unknown", reason=reason)


def _cut(
    gpu_count: int, rows: dict[int, list[str]], nic_count: int, nic_rows: int, legend: bool
) -> str | None:
    """Why the matrix looks cut off: GPU rows missing or short, or NIC rows missing."""
    if len(rows) < gpu_count:
        return f"the matrix has the rows of {len(rows)} of its {gpu_count} GPUs"
    for index in sorted(rows):
        if len(rows[index]) < gpu_count:
            return f"GPU{index}'s row is cut after {len(rows[index])} of {gpu_count} GPU columns"
    if nic_count and nic_rows < nic_count and not legend:
        return f"the matrix ends after {nic_rows} of its {nic_count} NIC rows"
    return None


def _legend_cut(text: str, nic_columns: list[str]) -> str | None:
    """Where the legend under the matrix is cut: it ends with the "NV#" line (the "PIX" line
    before NVLink), then, with NIC columns, one "NICn: name" line per NIC."""
    at = text.find("Legend:")
    if at < 0:
        return None
    legend = text[at:]
    lines = [line.strip() for line in legend.splitlines() if line.strip()]
    whole = _LEGEND_END.search(legend) or re.match(_OLD_LEGEND_END, lines[-1])
    if not whole:
        return "the text ends inside the legend"
    named = [column for column in nic_columns if column.startswith("NIC")]
    if named and "NIC Legend" in legend and len(_NIC_LEGEND.findall(legend)) < len(named):
        return "the text ends inside the NIC legend"
    return None


def _notes(
    text: str, gpu_count: int, rows: dict[int, list[str]], nic_columns: list[str]
) -> list[str]:
    notes = []
    affinity: dict[str, list[int]] = {}
    for index in sorted(rows):
        cells = rows[index]
        cpus = next((c for c in cells[gpu_count:] if _CPU_LIST.match(c)), None)
        if cpus is None:
            continue
        after = cells[cells.index(cpus, gpu_count) + 1 :]
        numa = after[0] if after and re.fullmatch(r"\d+", after[0]) else None
        label = f"CPUs {cpus}" + (f" (NUMA node {numa})" if numa is not None else "")
        affinity.setdefault(label, []).append(index)
    if affinity:
        groups = "; ".join(f"{_gpus(indices)}: {label}" for label, indices in affinity.items())
        notes.append(f"CPU affinity in nvidia-smi topo -m: {groups}")
    if nic_columns:
        legend = dict(_NIC_LEGEND.findall(text))
        names = [legend.get(column, column) for column in nic_columns]
        notes.append(f"{len(nic_columns)} NIC column(s) in nvidia-smi topo -m: {', '.join(names)}")
    return notes


def _gpus(indices: list[int]) -> str:
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"GPU{indices[0]}-GPU{indices[-1]}"
    return ", ".join(f"GPU{index}" for index in indices)


def parse_nvidia_smi_topo(text: str) -> Imported:
    """Read ``nvidia-smi topo -m``: a GPU record per GPU column and a link per pair.

    Raises :class:`NvidiaSmiTopoError` when no matrix is found.
    """
    topology = read_topology(text)
    if topology is None or topology.gpu_count == 0:
        raise NvidiaSmiTopoError("no 'GPU0 ...' matrix header followed by GPU0's row")
    gpus = [
        new_gpu(index, vendor="nvidia", backend="cuda", source=SRC, missing=MISSING)
        for index in range(topology.gpu_count)
    ]
    nvml = new_nvml(source=SRC, missing=MISSING, device_count=fact(topology.gpu_count, SRC))
    return Imported(
        empty_profile(nvml=nvml, gpus=gpus, gpu_topology=topology.links),
        truncated=topology.truncated,
        notes=topology.notes,
    )


def _near(sample: Sample) -> str | None:
    if "= Connection traversing" in sample.head and not looks_like_topo(sample.head):
        return "looks like nvidia-smi topo -m but has no matrix (a 'GPU0 ...' header and rows)"
    return None


FORMAT = Format(
    name="nvidia-smi topo -m",
    source=SRC,
    sniff=lambda sample: looks_like_topo(sample.head),
    parse=lambda sample: parse_nvidia_smi_topo(sample.text),
    rank=60,
    near=_near,
    example="nvidia-smi topo -m",
)
