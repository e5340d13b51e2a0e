"""Parse the table plain ``nvidia-smi`` prints into a profile.

Reads both the classic layout (drivers up to 530: ``| GPU  Name        Persistence-M|``) and the
wider one of 530 and later, where only the column widths differ. Each GPU is three table rows:
index, name, persistence, bus id, display, ECC; then fan, temperature, perf state, power, memory,
utilisation, compute mode; then (from driver 450) the MIG mode. Names are truncated by the table
("NVIDIA A100-SXM...") and are kept as printed, unless ``nvidia-smi -L`` lines pasted with the
table give the whole name (and the UUIDs). Driver 610 and later print "KMD Version" and "CUDA UMD
Version" in the banner. Jetson's integrated GPU prints ``N/A`` where a card prints its persistence
mode, bus id and memory. The "MIG devices" table below the GPUs gives each GPU's MIG instances
(never GPUs), the ``mig -lgip``/``-lgi`` tables nothing, and a ``topo -m`` matrix pasted along
the topology. A paste of some GPUs' rows without the banner is read too, as is a table cut off
anywhere (the cut is reported).
"""

from __future__ import annotations

import re
from typing import Any

from hwadvisor.importers.base import (
    MAX_GPUS,
    MAX_MIG,
    Imported,
    ImportFormatError,
    cap_gpus,
    empty_profile,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.nvidia_smi_list import read_list
from hwadvisor.importers.nvidia_smi_topo import read_topology
from hwadvisor.importers.nvidia_smi_xml import normalize_bus_id, timestamp_utc
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, MigInstance

SRC = Source.NVIDIA_SMI
MISSING = "not in the nvidia-smi table"

_HEADER = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)(?:\s+CUDA(?: UMD)? Version:\s*(\S+))?",
    re.IGNORECASE,
)
#: A GPU's first table row, for text without the banner: index, name, persistence, bus id.
_GPU_ROW = re.compile(
    r"(?m)^\|[ \t]+\d+[ \t]+\S[^|\n]*?[ \t](?:On|Off|N/A|WDDM|TCC)[ \t]*\|[ \t]*"
    r"(?:[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]|N/A)[ \t]"
)
# "   0  NVIDIA A100-SXM4-80GB          On  " (Windows prints WDDM / TCC in place of On / Off).
_ROW1_LEFT = re.compile(r"^(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC|N/A)$")
_ROW1_MID = re.compile(r"^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S+)$")
_ROW2_LEFT = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)$")
# Drivers before ~340 print "MB" for what later ones print as "MiB" (a 6 GB GTX TITAN: 6143MB).
_MEMORY = re.compile(r"^(\d+)\s*(?:MiB|MB)\s*/\s*(\d+)\s*(?:MiB|MB)$")
#: A row of the "MIG devices" table: GPU, GPU instance, compute instance, MIG device; memory;
#: SMs (then the shared engines).
_MIG_IDS = re.compile(r"^(\d+)\s+(\d+|N/A)\s+(\d+|N/A)\s+(\d+)$")
_MIG_MEMORY = re.compile(r"^(\d+)\s*MiB\s*/\s*(\d+)\s*MiB$")
_BORDER = re.compile(r"^\+[-=+]*\+$")
#: The boxes nvidia-smi prints below the GPUs (and ``nvidia-smi mig`` prints on its own).
_BOX_TITLE = re.compile(
    r"^\|\s*(Processes|Compute processes|MIG devices|GPU instance profiles|GPU instances):"
)
_ROW2_RIGHT = re.compile(r"^(\S+)\s+(.+)$")
_MIB = 1024**2
#: The date line nvidia-smi prints above the table ("Tue Nov 21 10:02:03 2023").
_DATE = re.compile(r"(?m)^\s*[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")


class NvidiaSmiTableError(ImportFormatError):
    """The text holds no nvidia-smi table."""


#: amd-smi's default table (ROCm 7), whose second GPU rows look like a partial nvidia-smi table.
_AMD_SMI_TABLE = re.compile(r"\|\s*BDF\s+GPU-Name\s*\||\|\s*AMD-SMI\s+\d")


def looks_like_nvidia_smi_table(text: str) -> bool:
    """The ``NVIDIA-SMI ... Driver Version:`` banner, or a GPU's first table row (index, name,
    persistence, bus id) when only part of the table was pasted; not amd-smi's table."""
    if _HEADER.search(text) is None and _AMD_SMI_TABLE.search(text):
        return False
    return _HEADER.search(text) is not None or _GPU_ROW.search(text) is not None


def parse_nvidia_smi_table(text: str) -> Imported:
    """Read the ``nvidia-smi`` table: driver facts, GPUs, and the time printed above it.

    Raises :class:`NvidiaSmiTableError` when neither the banner line nor a GPU row is there. A
    table cut short keeps the GPUs whose first row was read, and says where it was cut.
    """
    header = _HEADER.search(text)
    gpus, cuts = _gpus(text)
    gpus, too_many = cap_gpus(gpus)
    cuts += [too_many] if too_many else []
    listing = read_list(text)
    if header is None and not gpus:
        raise NvidiaSmiTableError("no 'NVIDIA-SMI ... Driver Version:' line and no GPU row")
    if header is None:
        cuts.insert(0, "no nvidia-smi banner: the text holds part of the table")
    gpus_cut = bool(cuts)  # more GPUs may follow the cut; a cut below the GPU table hides none
    if not cuts:
        cuts += _box_cut(text)
    if gpus:
        _add_mig_devices(text, gpus)
        _add_listed(gpus, listing.gpus)
    elif listing.gpus:
        gpus = listing.gpus  # the table is cut before its rows; nvidia-smi -L lines name the GPUs
    topology = read_topology(text)
    nvml = new_nvml(
        source=SRC,
        missing=MISSING,
        driver_version=_version(header.group(2) if header else None),
        cuda_driver_version=_version(header.group(3) if header else None),
        device_count=unknown("the table is cut off", SRC) if gpus_cut else fact(len(gpus), SRC),
    )
    when = _DATE.search(text[: header.start()]) if header else None
    profile = empty_profile(nvml=nvml, gpus=gpus)
    if topology is not None and topology.gpu_count == len(gpus):
        profile.gpu_topology = topology.links
    return Imported(
        profile,
        when_utc=timestamp_utc(when.group(0)) if when else None,
        truncated="; ".join(cuts) or None,
        notes=topology.notes if topology is not None else [],
    )


def _version(raw: str | None) -> Fact[str]:
    if raw is None:
        return unknown("no nvidia-smi banner in the text", SRC)
    if _na(raw):
        return unknown(f"nvidia-smi reports {raw}", SRC)
    return fact(raw, SRC)


def _cells(line: str, count: int = 3) -> list[str] | None:
    """The ``count`` cells of a table row, or None for any other line."""
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|")):
        return None
    cells = [cell.strip() for cell in stripped[1:-1].split("|")]
    return cells if len(cells) == count else None


def _gpus(text: str) -> tuple[list[GpuInfo], list[str]]:
    """The GPUs of the table, and where it is visibly cut (empty when it is not)."""
    lines = text.splitlines()
    rows = {n: cells for n, line in enumerate(lines) if (cells := _cells(line)) is not None}
    # Drivers from 450 print a third row per GPU (MIG mode), and say so in the column heads.
    per_gpu = 3 if "MIG M." in text else 2
    gpus: list[GpuInfo] = []
    cuts: list[str] = []
    last, taken = -1, 0
    for n in sorted(rows):
        first = _ROW1_LEFT.match(rows[n][0])
        if first is None or n <= last:
            continue
        if any(gpu.index == int(first.group(1)) for gpu in gpus):
            break  # the table again (nvidia-smi run twice, or a watch loop): the first is read
        if len(gpus) >= MAX_GPUS:
            cuts.append(f"more GPU rows than one machine has: the first {MAX_GPUS} are read")
            return gpus, cuts
        # A GPU's rows are consecutive lines; a line that is not a whole row is a cut.
        second, third = rows.get(n + 1), rows.get(n + 2)
        if second is None or _ROW1_LEFT.match(second[0]):
            second = third = None
        if third is not None and (_ROW1_LEFT.match(third[0]) or third[0] or third[1]):
            third = None  # the two-row layout of drivers before 450
        gpus.append(_gpu(first, rows[n], second, third))
        taken = 1 + (second is not None) + (third is not None)
        last = n + taken - 1
        if taken < per_gpu and rows.get(last + 1) and _ROW1_LEFT.match(rows[last + 1][0]):
            cuts.append(f"GPU {first.group(1)}'s rows are cut short")
    if not gpus:
        if _HEADER.search(text):
            cuts.append("the table is cut before its first GPU row")
        return gpus, cuts
    following = lines[last + 1].strip() if last + 1 < len(lines) else ""
    if taken < per_gpu or not _BORDER.match(following):
        where = "'s first row" if taken == 1 else ""
        cuts.append(f"the table is cut after GPU {gpus[-1].index}{where}")
    return gpus, cuts


def _box_cut(text: str) -> list[str]:
    """The text ends inside a box below the GPUs (processes, MIG devices): its last line is part
    of a box but not the border that closes one."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith(("|", "+")) or _BORDER.match(lines[-1]):
        return []
    titles = [m.group(1) for line in lines if (m := _BOX_TITLE.match(line))]
    box = f"the {titles[-1]} box" if titles else "the box below the GPUs"
    return [f"the text ends inside {box}"]


def _add_mig_devices(text: str, gpus: list[GpuInfo]) -> None:
    """The "MIG devices" table's rows as the MIG instances of their GPU (never as GPUs)."""
    by_index = {gpu.index: gpu for gpu in gpus}
    for line in text.splitlines():
        cells = _cells(line, 4)
        if cells is None:
            continue
        ids = _MIG_IDS.match(cells[0])
        gpu = by_index.get(int(ids.group(1))) if ids else None
        if ids is None or gpu is None or len(gpu.mig_instances) >= MAX_MIG:
            continue  # not a MIG row, or the box repeated (a watch loop)
        memory = _MIG_MEMORY.match(cells[1])
        sms = re.match(r"^(\d+)\s", cells[2] + " ")
        gpu.mig_instances.append(
            MigInstance(
                index=int(ids.group(4)),
                uuid=unknown(MISSING, SRC),
                name=unknown(MISSING, SRC),
                memory_total_bytes=fact(
                    int(memory.group(2)) * _MIB if memory else None, SRC, "unparseable memory"
                ),
                gpu_instance_id=_mig_id(ids.group(2)),
                compute_instance_id=_mig_id(ids.group(3)),
                multiprocessor_count=fact(int(sms.group(1)) if sms else None, SRC, MISSING),
            )
        )


def _mig_id(raw: str) -> Fact[int]:
    return fact(int(raw), SRC) if raw.isdigit() else unknown(f"nvidia-smi reports {raw}", SRC)


def _add_listed(gpus: list[GpuInfo], listed: list[GpuInfo]) -> None:
    """What ``nvidia-smi -L`` lines pasted with the table add: the whole name where the table
    truncated it, the UUID, and the MIG devices' UUIDs and names."""
    by_index = {gpu.index: gpu for gpu in listed}
    for gpu in gpus:
        entry = by_index.get(gpu.index)
        if entry is None or not _same_card(gpu.name.value, entry.name.value):
            continue
        if gpu.name.value != entry.name.value:
            gpu.name = entry.name.model_copy()
        gpu.uuid = entry.uuid.model_copy()
        instances = {mig.index: mig for mig in gpu.mig_instances}
        for mig in entry.mig_instances:
            mine = instances.get(mig.index)
            if mine is None:
                gpu.mig_instances.append(mig.model_copy(deep=True))
            else:
                mine.uuid, mine.name = mig.uuid.model_copy(), mig.name.model_copy()
        if entry.mig_instances and gpu.mig_enabled.value is None:
            gpu.mig_enabled = fact(True, SRC)


def _same_card(table: str | None, listed: str | None) -> bool:
    """The table's name (whole, or cut to "NVIDIA A100-SXM...") is the -L line's name."""
    if not table or not listed:
        return False
    return listed == table or (table.endswith("...") and listed.startswith(table[:-3].rstrip()))


def _na(value: str) -> bool:
    return value.upper() in ("N/A", "[N/A]", "ERR!", "UNKNOWN ERROR", "NOT SUPPORTED")


def _number(value: str, unit: str) -> float | None:
    match = re.fullmatch(rf"(\d+(?:\.\d+)?)\s*{unit}", value)
    return float(match.group(1)) if match else None


def _measure(value: str, unit: str, what: str) -> Fact[Any]:
    if _na(value):
        return unknown(f"nvidia-smi reports {value} for {what}", SRC)
    number = _number(value, unit)
    if number is None:
        return unknown(f"unparseable {what} {value!r} in nvidia-smi table", SRC)
    return fact(number, SRC)


def _int_measure(value: str, unit: str, what: str) -> Fact[int]:
    measured = _measure(value, unit, what)
    if measured.value is None:
        return measured
    return fact(int(measured.value), SRC)


def _gpu(
    first: re.Match[str], row1: list[str], row2: list[str] | None, row3: list[str] | None
) -> GpuInfo:
    fields: dict[str, Any] = {}
    index, name, persistence = first.groups()
    fields["name"] = fact(name, SRC)
    if persistence in ("On", "Off"):
        fields["persistence_mode"] = fact(persistence == "On", SRC)
    elif persistence == "N/A":  # Jetson's integrated GPU
        fields["persistence_mode"] = unknown("nvidia-smi reports N/A for persistence mode", SRC)
    else:
        reason = f"Windows driver model {persistence}: no persistence mode"
        fields["persistence_mode"] = unknown(reason, SRC)
    bus = _ROW1_MID.match(row1[1])
    bus_na = row1[1].split()[0] if row1[1] and _na(row1[1].split()[0]) else None
    fields["pci_bus_id"] = fact(
        normalize_bus_id(bus.group(1)) if bus else None,
        SRC,
        f"nvidia-smi reports {bus_na} for the bus id"
        if bus_na
        else f"unparseable bus id {row1[1]!r}",
    )
    ecc = row1[2]
    # The column counts volatile uncorrected errors: a number means ECC is on, "Off" that it is off.
    if ecc.isdigit():
        fields["ecc_enabled"] = fact(True, SRC)
    elif ecc == "Off":
        fields["ecc_enabled"] = fact(False, SRC)
    else:
        fields["ecc_enabled"] = unknown(f"nvidia-smi reports {ecc or 'nothing'} for ECC", SRC)
    if row2 is not None:
        _second_row(row2, fields)
    else:
        for key in ("temperature_c", "power_draw_watts", "power_limit_watts"):
            fields[key] = unknown("the table was cut short", SRC)
    if row3 is not None and row3[2]:
        mig = row3[2]
        states = {"Enabled": True, "Disabled": False}
        fields["mig_enabled"] = fact(states.get(mig), SRC, f"nvidia-smi reports {mig} for MIG")
    return new_gpu(
        int(index), vendor="nvidia", backend="cuda", source=SRC, missing=MISSING, **fields
    )


def _second_row(row: list[str], fields: dict[str, Any]) -> None:
    left = _ROW2_LEFT.match(row[0])
    if left is not None:
        _fan, temp, _perf, draw, cap = left.groups()
        fields["temperature_c"] = _int_measure(temp, "C", "temperature")
        fields["power_draw_watts"] = _measure(draw, "W", "power draw")
        fields["power_limit_watts"] = _measure(cap, "W", "power cap")
    memory = _MEMORY.match(row[1])
    if memory is not None:
        used, total = (int(v) * _MIB for v in memory.groups())
        fields["vram_used_bytes"] = fact(used, SRC)
        fields["vram_total_bytes"] = fact(total, SRC)
    elif _na(row[1]):  # Jetson: "Not Supported" (its memory is the system's)
        for key in ("vram_used_bytes", "vram_total_bytes"):
            fields[key] = unknown(f"nvidia-smi reports {row[1]} for memory", SRC)
    right = _ROW2_RIGHT.match(row[2])
    if right is not None:
        fields["utilization_percent"] = _int_measure(right.group(1), "%", "utilisation")


FORMAT = Format(
    name="nvidia-smi table",
    source=SRC,
    sniff=lambda sample: looks_like_nvidia_smi_table(sample.head),
    parse=lambda sample: parse_nvidia_smi_table(sample.text),
    rank=70,
    example="nvidia-smi",
)
