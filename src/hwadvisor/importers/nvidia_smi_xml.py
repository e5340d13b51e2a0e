"""Parse the XML of ``nvidia-smi -q -x`` into NVML-shaped facts.

A pure function over text: it serves the ``import`` command, and lets a scan on a GPU machine be
checked field by field against what ``nvidia-smi`` says on the same machine.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    empty_profile,
    new_nvml,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, MigInstance, NvmlInfo

T = TypeVar("T")

SRC = Source.NVIDIA_SMI
MISSING = "not in this nvidia-smi output"

# Words nvidia-smi prints instead of a value; bracketed forms ("[N/A]", "[Unknown Error]") are
# handled generically.
_NO_VALUE = {
    "n/a",
    "not supported",
    "unknown error",
    "insufficient permissions",
    "requested functionality has been deprecated",
    "gpu requires reset",
    "none",
}

# A DTD internal subset or an entity declaration is how billion-laughs and XXE payloads arrive;
# nvidia-smi only ever writes an external ``<!DOCTYPE nvidia_smi_log SYSTEM "...dtd">`` line,
# which expat does not fetch.
_INTERNAL_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[", re.IGNORECASE)
_ENTITY = re.compile(r"<!ENTITY", re.IGNORECASE)

_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)$")
_BYTES_PER = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


#: GPU facts that NVML and ``nvidia-smi -q -x`` must report alike on one machine: a scan is
#: checked against the XML on these (``pytest -m gpu``, scripts/gpu_checks.py). Instant
#: readings (temperature, clocks now, memory in use) move between the two and are left out.
COMPARABLE_FIELDS = (
    "name",
    "uuid",
    "serial",
    "pci_bus_id",
    "architecture",
    "vram_total_bytes",
    "power_limit_watts",
    "sm_clock_max_mhz",
    "memory_clock_max_mhz",
    "pcie_generation_max",
    "pcie_width_max",
    "ecc_enabled",
    "persistence_mode",
    "mig_enabled",
    "vbios_version",
)


class NvidiaSmiXmlError(ImportFormatError):
    """The text is not ``nvidia-smi -q -x`` output that can be read safely."""


def parse_nvidia_smi_xml(text: str) -> tuple[NvmlInfo, list[GpuInfo]]:
    """Read ``nvidia-smi -q -x`` output: the driver facts and one :class:`GpuInfo` per ``<gpu>``.

    Values nvidia-smi marks ``N/A`` / ``Not Supported`` (bracketed or not) become ``null`` with
    that reason. Raises :class:`NvidiaSmiXmlError` (a ``ValueError``) on malformed XML, on any
    DTD internal subset or entity declaration, and on a root other than ``<nvidia_smi_log>``.
    """
    return gpus_from_root(_parse(text))


def gpus_from_root(root: ET.Element) -> tuple[NvmlInfo, list[GpuInfo]]:
    """The driver facts and GPUs of an ``<nvidia_smi_log>`` tree (parsed XML, or the tree the
    ``nvidia-smi -q`` text importer builds)."""
    gpu_elements, _ = cap_gpus(root.findall("gpu"))
    attached = _int(_text(root, "attached_gpus"), "")
    device_count: Fact[int] = attached if attached.known else fact(len(gpu_elements), SRC)
    info = new_nvml(
        source=SRC,
        missing="nvidia-smi -q -x does not report the NVML version",
        driver_version=_str(_text(root, "driver_version")),
        cuda_driver_version=_str(_text(root, "cuda_version")),
        device_count=device_count,
    )
    return info, [_gpu(index, element) for index, element in enumerate(gpu_elements)]


def normalize_bus_id(bus_id: str) -> str | None:
    """A PCI bus id (``0000:17:00.0``, ``17:00.0``, ...) as NVML writes it: ``00000000:17:00.0``."""
    match = _BUS_ID.match(bus_id.strip())
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain or '0', 16):08X}:{int(bus, 16):02X}:{int(device, 16):02X}.{function}"


# --------------------------------------------------------------------------------------------


def _parse(text: str) -> ET.Element:
    root, cut = _parse_up_to_cut(text)
    if cut is not None:
        raise NvidiaSmiXmlError(f"not well-formed nvidia-smi XML: {cut}")
    return root


def _parse_up_to_cut(text: str) -> tuple[ET.Element, str | None]:
    """The ``<nvidia_smi_log>`` tree and, when the text stops before the document ends (a
    paste cut short, a capture of a killed nvidia-smi), what was read up to the cut and why it
    is incomplete. Malformed XML before the end is still an error."""
    if not isinstance(text, str):
        raise NvidiaSmiXmlError(f"expected the XML as text, got {type(text).__name__}")
    if _INTERNAL_SUBSET.search(text) or _ENTITY.search(text):
        raise NvidiaSmiXmlError(
            "refusing nvidia-smi XML with a DTD internal subset or entity declarations "
            "(nvidia-smi never writes them)"
        )
    # Captured output often carries a BOM or a leading newline, which puts the XML
    # declaration off the start and makes expat fail.
    body = text.lstrip("\ufeff \t\r\n")
    parser: Any = ET.XMLPullParser(events=("start",))  # typeshed's events: one-item tuples
    first: ET.Element | None = None
    cut: str | None = None
    try:
        parser.feed(body)
        for _, element in parser.read_events():
            if first is None and isinstance(element, ET.Element):
                first = element
    except ET.ParseError as err:
        raise NvidiaSmiXmlError(f"not well-formed nvidia-smi XML: {_one_line(str(err))}") from err
    try:
        parser.close()
    except ET.ParseError as err:
        # Everything fed was well formed and the document is open: the text was cut off.
        if first is None:
            raise NvidiaSmiXmlError(
                f"not well-formed nvidia-smi XML: {_one_line(str(err))}"
            ) from err
        cut = f"the XML stops before its end ({_one_line(str(err))})"
    root = first
    if root is None:
        raise NvidiaSmiXmlError("not well-formed nvidia-smi XML: no element found")
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiXmlError(
            f"not nvidia-smi -q -x output: root element is <{_one_line(root.tag)}>, "
            "expected <nvidia_smi_log>"
        )
    return root, cut


def _one_line(text: str) -> str:
    return " ".join(text.split())


_Raw = tuple[str | None, str]
"""(text, reason): the cleaned element text, or None with why there is no value."""


def _text(parent: ET.Element, path: str) -> _Raw:
    element = parent.find(path)
    if element is None:
        return None, MISSING
    raw = " ".join((element.text or "").split())
    if not raw:
        return None, "empty in nvidia-smi output"
    word = raw[1:-1].strip() if raw.startswith("[") and raw.endswith("]") else raw
    if word.lower() in _NO_VALUE or word != raw:
        return None, f"nvidia-smi reports {word}"
    return raw, ""


def _first(parent: ET.Element, *paths: str) -> _Raw:
    """The first of ``paths`` with a value; else the reason of the first one present."""
    reason = MISSING
    for path in paths:
        value, why = _text(parent, path)
        if value is not None:
            return value, ""
        if reason == MISSING:
            reason = why
    return None, reason


def _convert(raw: _Raw, convert: Callable[[str], T | None]) -> Fact[T]:
    value, reason = raw
    if value is None:
        return unknown(reason, SRC)
    try:
        converted = convert(value)
    except (ValueError, ArithmeticError):
        converted = None
    if converted is None:
        return unknown(f"unparseable value {value!r} in nvidia-smi output", SRC)
    return fact(converted, SRC)


def _number(value: str, unit: str) -> float | None:
    match = _NUMBER.match(value)
    if match is None or match.group(2).lower() != unit.lower():
        return None
    return float(match.group(1))


def _str(raw: _Raw) -> Fact[str]:
    return _convert(raw, lambda v: v)


def _int(raw: _Raw, unit: str) -> Fact[int]:
    def convert(value: str) -> int | None:
        number = _number(value, unit)
        return int(number) if number is not None and number.is_integer() else None

    return _convert(raw, convert)


def _watts(raw: _Raw) -> Fact[float]:
    return _convert(raw, lambda v: _number(v, "W"))


def _bytes(raw: _Raw) -> Fact[int]:
    def convert(value: str) -> int | None:
        match = _NUMBER.match(value)
        if match is None or match.group(2).lower() not in _BYTES_PER:
            return None
        return round(float(match.group(1)) * _BYTES_PER[match.group(2).lower()])

    return _convert(raw, convert)


def _width(raw: _Raw) -> Fact[int]:
    # Link widths read "16x".
    return _convert(raw, lambda v: int(v[:-1]) if v.lower().endswith("x") else None)


def _enabled(raw: _Raw) -> Fact[bool]:
    states = {"enabled": True, "disabled": False}
    return _convert(raw, lambda v: states.get(v.lower()))


def _compute_capability(raw: _Raw) -> Fact[str]:
    return _convert(raw, lambda v: v if re.fullmatch(r"\d+\.\d+", v) else None)


def _bus_id(raw: _Raw) -> Fact[str]:
    return _convert(raw, normalize_bus_id)


def _yes_no(raw: _Raw) -> Fact[bool]:
    states = {"yes": True, "no": False}
    return _convert(raw, lambda v: states.get(v.lower()))


def _in_section(gpu: ET.Element, section: str, *leaves: str) -> _Raw:
    """The first of ``leaves`` in ``section`` with a value; where the section itself says why
    it has none (``<remapped_rows>N/A</remapped_rows>``), that reason."""
    raw = _first(gpu, *(f"{section}/{leaf}" for leaf in leaves))
    if raw[0] is None and raw[1] == MISSING:
        own = _text(gpu, section)
        if own[0] is not None or own[1] not in (MISSING, "empty in nvidia-smi output"):
            return None, own[1] or f"nvidia-smi reports {own[0]} for {section}"
    return raw


#: ECC counters by kind: each part is read from the first of its spellings that has a value
#: (DTD 13 splits SRAM uncorrectable into parity and SEC-DED, which are then added up).
_ECC_PARTS: dict[str, tuple[tuple[tuple[str, ...], ...], ...]] = {
    "correctable": ((("sram_correctable",),), (("dram_correctable",),)),
    "uncorrectable": (
        (("sram_uncorrectable",), ("sram_uncorrectable_parity", "sram_uncorrectable_secded")),
        (("dram_uncorrectable",),),
    ),
}
#: Drivers before R450 count by bit: single-bit (corrected) and double-bit (uncorrected) totals.
_ECC_OLD = {"correctable": "single_bit/total", "uncorrectable": "double_bit/total"}


def _ecc_count(gpu: ET.Element, counter: str, kind: str) -> Fact[int]:
    """``<ecc_errors><volatile|aggregate>``'s errors of ``kind``, SRAM and DRAM added up."""
    base = f"ecc_errors/{counter}"
    total: int | None = None
    reason = MISSING
    for spellings in _ECC_PARTS[kind]:
        for paths in spellings:
            counts = [_int(_text(gpu, f"{base}/{path}"), "") for path in paths]
            if all(count.known for count in counts):
                total = (total or 0) + sum(count.value or 0 for count in counts)
                break
            if reason == MISSING:
                reason = next(c.reason for c in counts if not c.known) or MISSING
    if total is not None:
        return fact(total, SRC)
    old = _int(_in_section(gpu, "ecc_errors", f"{counter}/{_ECC_OLD[kind]}"), "")
    if old.known or reason == MISSING:
        return old
    return unknown(reason, SRC)


def _retired_pages(gpu: ET.Element) -> Fact[int]:
    """Pages retired for multiple single-bit and for double-bit errors, added up. ``-q`` text
    states each count on its section's line, the XML in a ``<retired_count>`` under it."""
    counts = [
        _int(_in_section(gpu, "retired_pages", f"{cause}/retired_count", cause), "")
        for cause in ("multiple_single_bit_retirement", "double_bit_retirement")
    ]
    known = [count.value for count in counts if count.value is not None]
    if not known:
        return counts[0]
    return fact(sum(known), SRC)


def _retirement_pending(gpu: ET.Element) -> Fact[bool]:
    flags = [
        _yes_no(_in_section(gpu, "retired_pages", leaf))
        for leaf in ("pending_retirement", "pending_blacklist")
    ]
    if any(flag.value for flag in flags):
        return fact(True, SRC)
    if any(flag.value is False for flag in flags):
        return fact(False, SRC)
    return flags[0]


def _gpu(index: int, gpu: ET.Element) -> GpuInfo:
    bus = _first(gpu, "pci/pci_bus_id")
    if bus[0] is None and gpu.get("id"):
        bus = (gpu.get("id"), "")
    power = ("power_readings", "gpu_power_readings")
    link = "pci/pci_gpu_link_info"
    fields: dict[str, Any] = {
        "name": _str(_text(gpu, "product_name")),
        "uuid": _str(_text(gpu, "uuid")),
        "serial": _str(_text(gpu, "serial")),
        "pci_bus_id": _bus_id(bus),
        "architecture": _str(_text(gpu, "product_architecture")),
        "compute_capability": _compute_capability(_text(gpu, "compute_cap")),
        "vram_total_bytes": _bytes(_text(gpu, "fb_memory_usage/total")),
        "vram_free_bytes": _bytes(_text(gpu, "fb_memory_usage/free")),
        "vram_used_bytes": _bytes(_text(gpu, "fb_memory_usage/used")),
        "multiprocessor_count": unknown(MISSING, SRC),
        # Drivers >= 530 moved these under <gpu_power_readings> and renamed the limit
        # "current_power_limit"; >= 580 may leave power_draw N/A beside average/instant draws.
        "power_limit_watts": _watts(
            _first(
                gpu,
                *(f"{p}/enforced_power_limit" for p in power),
                *(f"{p}/current_power_limit" for p in power),
                *(f"{p}/power_limit" for p in power),
            )
        ),
        "power_draw_watts": _watts(
            _first(
                gpu,
                *(f"{p}/power_draw" for p in power),
                *(f"{p}/average_power_draw" for p in power),
                *(f"{p}/instant_power_draw" for p in power),
            )
        ),
        "sm_clock_mhz": _int(_text(gpu, "clocks/sm_clock"), "MHz"),
        "sm_clock_max_mhz": _int(_text(gpu, "max_clocks/sm_clock"), "MHz"),
        "memory_clock_mhz": _int(_text(gpu, "clocks/mem_clock"), "MHz"),
        "memory_clock_max_mhz": _int(_text(gpu, "max_clocks/mem_clock"), "MHz"),
        "pcie_generation": _int(_text(gpu, f"{link}/pcie_gen/current_link_gen"), ""),
        "pcie_generation_max": _int(_text(gpu, f"{link}/pcie_gen/max_link_gen"), ""),
        "pcie_width": _width(_text(gpu, f"{link}/link_widths/current_link_width")),
        "pcie_width_max": _width(_text(gpu, f"{link}/link_widths/max_link_width")),
        "temperature_c": _int(_text(gpu, "temperature/gpu_temp"), "C"),
        "utilization_percent": _int(_text(gpu, "utilization/gpu_util"), "%"),
        "ecc_enabled": _enabled(_text(gpu, "ecc_mode/current_ecc")),
        "persistence_mode": _enabled(_text(gpu, "persistence_mode")),
        "mig_enabled": _enabled(_text(gpu, "mig_mode/current_mig")),
        "vbios_version": _str(_text(gpu, "vbios_version")),
        "ecc_errors_corrected_volatile": _ecc_count(gpu, "volatile", "correctable"),
        "ecc_errors_uncorrected_volatile": _ecc_count(gpu, "volatile", "uncorrectable"),
        "ecc_errors_uncorrected_aggregate": _ecc_count(gpu, "aggregate", "uncorrectable"),
        "retired_pages": _retired_pages(gpu),
        "retired_pages_pending": _retirement_pending(gpu),
        "remapped_rows_uncorrectable": _int(
            _in_section(gpu, "remapped_rows", "remapped_row_unc"), ""
        ),
        "remapped_rows_pending": _yes_no(_in_section(gpu, "remapped_rows", "remapped_row_pending")),
        "remapped_rows_failed": _yes_no(_in_section(gpu, "remapped_rows", "remapped_row_failure")),
        "xid_errors_recent": unknown(
            "nvidia-smi does not show Xid errors (the kernel log does)", SRC
        ),
    }
    migs = [_mig(i, m) for i, m in enumerate(gpu.findall("mig_devices/mig_device"))]
    return GpuInfo(index=index, vendor="nvidia", backend="cuda", mig_instances=migs, **fields)


def _mig(position: int, mig: ET.Element) -> MigInstance:
    index = _int(_text(mig, "index"), "")
    return MigInstance(
        index=index.value if index.value is not None else position,
        uuid=unknown(MISSING, SRC),
        name=unknown(MISSING, SRC),
        memory_total_bytes=_bytes(_text(mig, "fb_memory_usage/total")),
        gpu_instance_id=_int(_text(mig, "gpu_instance_id"), ""),
        compute_instance_id=_int(_text(mig, "compute_instance_id"), ""),
        multiprocessor_count=_int(_text(mig, "device_attributes/shared/multiprocessor_count"), ""),
    )


def _xml_part(text: str) -> str:
    """The XML document in ``text``, without a shell prompt or notes pasted before it."""
    start = text.find("<?xml")
    if start < 0:
        start = text.find("<nvidia_smi_log")
    return text[start:] if start > 0 else text


_TIMESTAMP_FORMAT = "%a %b %d %H:%M:%S %Y"


def timestamp_utc(raw: str) -> str | None:
    """nvidia-smi's ``Tue Nov 21 10:02:03 2023`` as ISO 8601 UTC (nvidia-smi prints the
    machine's local time; taken as UTC, which most servers run on), or None."""
    try:
        when = datetime.strptime(" ".join(raw.split()), _TIMESTAMP_FORMAT)
    except ValueError:
        return None
    return when.replace(tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _truncated(root: ET.Element, gpus: list[GpuInfo]) -> str | None:
    attached = (root.findtext("attached_gpus") or "").strip()
    if attached.isdigit() and int(attached) > len(gpus):
        return f"{len(gpus)} of the {attached} attached GPUs are in the text"
    last = root.findall("gpu")[-1:] if gpus else []
    if last and last[0].find("fb_memory_usage") is None:
        return "the last GPU's section ends before its memory usage"
    return None


def imported_from_root(root: ET.Element, cut: str | None = None) -> Imported:
    """What an ``<nvidia_smi_log>`` tree says: driver, GPUs, the report's time, and whether the
    report was cut off (fewer GPUs than attached, the last one without its memory section)."""
    nvml, gpus = gpus_from_root(root)
    _, too_many = cap_gpus(root.findall("gpu"))
    return Imported(
        empty_profile(nvml=nvml, gpus=gpus),
        when_utc=timestamp_utc(root.findtext("timestamp") or ""),
        truncated=too_many or _truncated(root, gpus) or cut,
    )


def _import(sample: Sample) -> Imported:
    return imported_from_root(*_parse_up_to_cut(_xml_part(sample.text)))


FORMAT = Format(
    name="nvidia-smi -q -x XML",
    source=SRC,
    sniff=lambda sample: "<nvidia_smi_log" in sample.head,
    parse=_import,
    rank=90,
    example="nvidia-smi -q -x",
)
