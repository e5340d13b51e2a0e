"""Parse the table plain ``nvidia-smi`` prints into a profile.

Reads both the classic layout (drivers up to 530: ``| GPU  Name        Persistence-M|``) and the
wider one of 530 and later, where only the column widths differ. Each GPU is three table rows:
index, name, persistence, bus id, display, ECC; then fan, temperature, perf state, power, memory,
utilisation, compute mode; then (from driver 450) the MIG mode. Names are truncated by the table
("NVIDIA A100-SXM...") and are kept as printed.
"""

from __future__ import annotations

import re
from typing import Any

from hwadvisor.importers.base import Imported, ImportFormatError, empty_profile, new_gpu
from hwadvisor.importers.nvidia_smi_xml import normalize_bus_id, timestamp_utc
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, NvmlInfo, NvmlStatus

SRC = Source.NVIDIA_SMI
MISSING = "not in the nvidia-smi table"

_HEADER = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?", re.IGNORECASE
)
# "   0  NVIDIA A100-SXM4-80GB          On  " (Windows prints WDDM / TCC in place of On / Off).
_ROW1_LEFT = re.compile(r"^(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC)$")
_ROW1_MID = re.compile(r"^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S+)$")
_ROW2_LEFT = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)$")
_MEMORY = re.compile(r"^(\d+)\s*MiB\s*/\s*(\d+)\s*MiB$")
_ROW2_RIGHT = re.compile(r"^(\S+)\s+(.+)$")
_MIB = 1024**2
#: The date line nvidia-smi prints above the table ("Tue Nov 21 10:02:03 2023").
_DATE = re.compile(r"(?m)^\s*[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")


class NvidiaSmiTableError(ImportFormatError):
    """The text holds no nvidia-smi table."""


def looks_like_nvidia_smi_table(text: str) -> bool:
    """The ``NVIDIA-SMI ... Driver Version:`` banner is present."""
    return _HEADER.search(text) is not None


def parse_nvidia_smi_table(text: str) -> Imported:
    """Read the ``nvidia-smi`` table: driver facts, GPUs, and the time printed above it.

    Raises :class:`NvidiaSmiTableError` when the banner line is absent. A table cut short keeps
    the GPUs whose first row was read.
    """
    header = _HEADER.search(text)
    if header is None:
        raise NvidiaSmiTableError("no 'NVIDIA-SMI ... Driver Version:' line")
    gpus = _gpus(text)
    cuda = header.group(3)
    nvml = NvmlInfo(
        status=NvmlStatus.OK,
        driver_version=fact(header.group(2), SRC),
        cuda_driver_version=fact(
            cuda if cuda and cuda.upper() != "N/A" else None, SRC, f"nvidia-smi reports {cuda}"
        ),
        nvml_version=unknown(MISSING, SRC),
        binding_version=unknown("not applicable: read from nvidia-smi output", SRC),
        device_count=fact(len(gpus), SRC),
    )
    when = _DATE.search(text[: header.start()])
    return Imported(
        empty_profile(nvml=nvml, gpus=gpus),
        when_utc=timestamp_utc(when.group(0)) if when else None,
    )


def _cells(line: str) -> list[str] | None:
    """The three cells of a GPU table row, or None for any other line."""
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|")):
        return None
    cells = [cell.strip() for cell in stripped[1:-1].split("|")]
    return cells if len(cells) == 3 else None


def _gpus(text: str) -> list[GpuInfo]:
    rows = [cells for line in text.splitlines() if (cells := _cells(line)) is not None]
    gpus: list[GpuInfo] = []
    i = 0
    while i < len(rows):
        first = _ROW1_LEFT.match(rows[i][0])
        if first is None:
            i += 1
            continue
        second = rows[i + 1] if i + 1 < len(rows) else None
        third = rows[i + 2] if i + 2 < len(rows) else None
        if second is not None and _ROW1_LEFT.match(second[0]):
            second = third = None  # a table cut short: the next GPU starts here
        if third is not None and (_ROW1_LEFT.match(third[0]) or third[0] or third[1]):
            third = None  # the two-row layout of drivers before 450
        gpus.append(_gpu(first, rows[i], second, third))
        i += 1 + (second is not None) + (third is not None)
    return gpus


def _na(value: str) -> bool:
    return value.upper() in ("N/A", "[N/A]", "ERR!", "UNKNOWN ERROR")


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
    fields["persistence_mode"] = (
        fact(persistence == "On", SRC)
        if persistence in ("On", "Off")
        else unknown(f"Windows driver model {persistence}: no persistence mode", SRC)
    )
    bus = _ROW1_MID.match(row1[1])
    fields["pci_bus_id"] = fact(
        normalize_bus_id(bus.group(1)) if bus else None, SRC, f"unparseable bus id {row1[1]!r}"
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
