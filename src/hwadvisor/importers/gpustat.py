"""``gpustat --json`` and plain ``gpustat``: NVIDIA GPUs as gpustat (NVML underneath) lists them.

The JSON has the host name, the driver version, the query time (the machine's local time, no
zone) and per GPU its index, UUID, name, temperature, utilisation, power and memory in MiB. The
text has a header (``host  Mon Aug 22 15:23:57 2022  515.65.01``; the driver from gpustat 0.6)
and one line per GPU: ``[0] Tesla P100-PCIE-16GB | 27'C,   0 % |   103 / 16384 MB | ...``.
Process lists (user names, commands) are not read.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    empty_profile,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.jsontext import load_json_prefix
from hwadvisor.importers.nvidia_smi_xml import timestamp_utc
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, NvmlInfo

SRC = Source.GPUSTAT
MISSING = "not in gpustat output"
_MIB = 1024**2

_JSON_SNIFF = re.compile(r'"query_time"\s*:')
_JSON_GPU = re.compile(r'"(?:gpus|memory\.total|temperature\.gpu|utilization\.gpu)"\s*:')
#: A GPU line's start: ``[3] Tesla P100-...``; the rest is ``|``-separated cells.
_START = re.compile(r"[ \t]*\[(\d{1,4})\][ \t]+\S")
#: The memory cell: ``  1234 / 24576 MB``.
_MEMORY = re.compile(r"[ \t]*(\?\?|\d+)[ \t]*/[ \t]*(\?\?|\d+)[ \t]*MB[ \t]*")
_DATE = re.compile(r"\b([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\b")
#: ``host   <time as the locale writes it>  <driver>`` (the driver from gpustat 0.6); matched
#: on short lines only.
_HEADER = re.compile(r"(\S+) {2,}(\S[^|\[\]]*?\d\d:\d\d[^|\[\]]*?)(?: {2,}(\d+\.\d+(?:\.\d+)?))? *")
_TEMP = re.compile(r"[ \t]*(\?\?|-?\d+)[ \t]*(?:°|'|’)?[ \t]*C\b")
_PERCENT = re.compile(r"(\?\?|\d+)[ \t]*%")
_POWER = re.compile(r"(\?\?|\d+)[ \t]*(?:/[ \t]*(\?\?|\d+)[ \t]*)?W\b")
_LOCAL_TIME = "gpustat prints the machine's local time without a zone; read as UTC"


class GpustatError(ImportFormatError):
    """The text holds neither gpustat's JSON nor its GPU lines."""


def looks_like_gpustat(sample: Sample) -> bool:
    """``gpustat --json`` (``query_time`` beside ``gpus`` or per-GPU keys), or a
    ``[i] name | ... | a / b MB`` line."""
    head = sample.head
    if _JSON_SNIFF.search(head) and _JSON_GPU.search(head):
        return True
    return any(_gpu_line(line) is not None for line in head.splitlines())


def _gpu_line(line: str) -> tuple[int, str, str, str, str] | None:
    """(index, name, stats cell, used, total) of a GPU line, or None. Split, not one regular
    expression: the cells hold anything, and a pattern over them backtracks on long lines."""
    start = _START.match(line)
    if start is None:
        return None
    cells = line[start.end() - 1 :].split("|")
    if len(cells) < 3:
        return None
    memory = _MEMORY.fullmatch(cells[2])
    if memory is None:
        return None
    return int(start.group(1)), cells[0].strip(), cells[1], memory.group(1), memory.group(2)


def _header(line: str) -> re.Match[str] | None:
    stripped = line.strip()
    return _HEADER.fullmatch(stripped) if len(stripped) <= 200 else None


# --------------------------------------------------------------------------------------------
# JSON


def _iso_utc(raw: Any) -> tuple[str | None, bool]:
    """gpustat's ``query_time`` (``datetime.isoformat()``) as ISO 8601 UTC, and whether it
    carried a zone (gpustat's does not: it is the machine's local time)."""
    if not isinstance(raw, str):
        return None, False
    try:
        when = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None, False
    zoned = when.tzinfo is not None
    if zoned:
        when = when.astimezone(timezone.utc)
    return when.replace(tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), zoned


def _number(entry: dict[str, Any], key: str) -> tuple[float | None, str]:
    if key not in entry:
        return None, MISSING
    value = entry[key]
    if value is None:
        return None, f"gpustat reports null for {key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"unreadable {key} {value!r}"
    if not math.isfinite(value):
        return None, f"gpustat reports {value!r} for {key}"
    return float(value), ""


def _int_fact(entry: dict[str, Any], key: str, scale: int = 1) -> Fact[int]:
    value, why = _number(entry, key)
    return fact(int(value) * scale if value is not None else None, SRC, why)


def _float_fact(entry: dict[str, Any], key: str) -> Fact[float]:
    value, why = _number(entry, key)
    return fact(value, SRC, why)


def _json_gpus(document: dict[str, Any]) -> list[GpuInfo]:
    gpus = []
    entries = document.get("gpus")
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue  # an entry cut off before its name
        index = entry.get("index")
        uuid = entry.get("uuid")
        gpus.append(
            new_gpu(
                index if isinstance(index, int) and not isinstance(index, bool) else position,
                vendor="nvidia",
                backend="cuda",
                source=SRC,
                missing=MISSING,
                name=fact(entry["name"], SRC),
                uuid=fact(uuid if isinstance(uuid, str) and uuid else None, SRC, MISSING),
                temperature_c=_int_fact(entry, "temperature.gpu"),
                utilization_percent=_int_fact(entry, "utilization.gpu"),
                power_draw_watts=_float_fact(entry, "power.draw"),
                power_limit_watts=_float_fact(entry, "enforced.power.limit"),
                vram_total_bytes=_int_fact(entry, "memory.total", _MIB),
                vram_used_bytes=_int_fact(entry, "memory.used", _MIB),
            )
        )
    return gpus


def _parse_json(document: dict[str, Any], cut: str | None) -> Imported:
    gpus = _json_gpus(document)
    driver = document.get("driver_version")
    when, zoned = _iso_utc(document.get("query_time"))
    hostname = document.get("hostname")
    notes = [_LOCAL_TIME] if when and not zoned else []
    return Imported(
        empty_profile(
            nvml=_nvml(driver if isinstance(driver, str) else None, gpus, cut), gpus=gpus
        ),
        when_utc=when,
        hostname=hostname if isinstance(hostname, str) and hostname else None,
        truncated=cut,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------
# Text


def _measure(raw: str | None, what: str, scale: int = 1) -> Fact[Any]:
    if raw is None:
        return unknown(f"gpustat printed no {what} (an option not given)", SRC)
    if raw == "??":
        return unknown(f"gpustat reports ?? for {what}", SRC)
    return fact(int(raw) * scale, SRC)


def _text_gpu(index: int, name: str, stats: str, used: str, total: str) -> GpuInfo:
    temperature = _TEMP.match(stats)
    rest = stats[temperature.end() :] if temperature else stats
    # "(E:  88 %  D:  67 %)" is the codec utilisation, not the GPU's.
    rest = re.sub(r"\(E:.*?\)", "", rest)
    percents = _PERCENT.findall(rest)
    # With -F the fan speed comes first: "80°C,  16 %,  76 %".
    utilization = percents[-1] if percents else None
    power = _POWER.search(rest)
    return new_gpu(
        index,
        vendor="nvidia",
        backend="cuda",
        source=SRC,
        missing=MISSING,
        name=fact(name, SRC),
        temperature_c=_measure(temperature.group(1) if temperature else None, "temperature"),
        utilization_percent=_measure(utilization, "utilization"),
        power_draw_watts=_float(power.group(1) if power else None, "power draw"),
        power_limit_watts=_float(
            power.group(2) if power and power.group(2) else None, "the power limit"
        ),
        vram_total_bytes=_measure(total, "memory total", _MIB),
        vram_used_bytes=_measure(used, "memory used", _MIB),
    )


def _float(raw: str | None, what: str) -> Fact[float]:
    if raw is None:
        return unknown(f"gpustat printed no {what} (shown with -P only)", SRC)
    if raw == "??":
        return unknown(f"gpustat reports ?? for {what}", SRC)
    return fact(float(raw), SRC)


def _parse_text(text: str) -> Imported:
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _gpu_line(line) is not None), None)
    if first is None:
        raise GpustatError("no '[i] name | ... | used / total MB' line")
    header = _header_before(lines, first)
    gpus: list[GpuInfo] = []
    seen: set[int] = set()
    snapshots = 1
    cut: str | None = None
    for line in lines[first:]:
        found = _gpu_line(line)
        if found is None:
            if _header(line):
                snapshots += 1  # a second run (watch, a loop): the first one is read
                break
            partial = _START.match(line)
            if partial and int(partial.group(1)) not in seen:
                cut = f"the line of GPU {partial.group(1)} is cut off"
                break
            continue
        if found[0] in seen:
            snapshots += 1
            break
        seen.add(found[0])
        gpus.append(_text_gpu(*found))
    notes = []
    if snapshots > 1:
        notes.append("the text holds several gpustat runs; the first is read")
    hostname, when, driver = None, None, None
    if header is not None:
        hostname, when, driver = header
        if when:
            notes.append(_LOCAL_TIME)
    return Imported(
        empty_profile(nvml=_nvml(driver, gpus, cut), gpus=gpus),
        when_utc=when,
        hostname=hostname,
        truncated=cut,
        notes=notes,
    )


def _header_before(
    lines: list[str], first: int
) -> tuple[str | None, str | None, str | None] | None:
    """(host, time, driver) from gpustat's header, the line just above the first GPU line.
    The time is read where the locale writes it as C does (``Mon Aug 22 15:23:57 2022``)."""
    above = [line for line in lines[max(0, first - 3) : first] if line.strip()]
    if not above:
        return None
    header = _header(above[-1])
    if header is None:
        return None
    date = _DATE.search(header.group(2))
    return header.group(1), timestamp_utc(date.group(1)) if date else None, header.group(3)


# --------------------------------------------------------------------------------------------


def _nvml(driver: str | None, gpus: list[GpuInfo], cut: str | None) -> NvmlInfo:
    # gpustat reads the GPUs through NVML: it worked when the output was taken.
    return new_nvml(
        source=SRC,
        missing=MISSING,
        driver_version=fact(driver, SRC, "gpustat printed no driver version"),
        device_count=(
            unknown(f"the output is cut off ({cut})", SRC) if cut else fact(len(gpus), SRC)
        ),
    )


def json_document(sample: Sample) -> tuple[Any, str | None]:
    """The JSON document of ``sample`` and where it is cut, also after a prompt line that starts
    with ``[`` (``[gh]$ gpustat --json``), which :attr:`Sample.json` takes for a JSON array."""
    if sample.json is not None:
        return sample.json, sample.json_cut
    start = sample.text.find("\n{")
    if 0 <= start <= 4096:
        return load_json_prefix(sample.text[start + 1 :])
    return None, None


def parse_gpustat(sample: Sample) -> Imported:
    """Read ``gpustat --json`` or plain ``gpustat`` output.

    Raises :class:`GpustatError` when no GPU can be read.
    """
    document, cut = json_document(sample)
    if isinstance(document, dict) and "gpus" in document:
        return _parse_json(document, cut)
    return _parse_text(sample.text)


def _near(sample: Sample) -> str | None:
    if _JSON_SNIFF.search(sample.head) and '"gpus"' in sample.head:
        return "looks like gpustat --json but has no GPU entries"
    return None


FORMAT = Format(
    name="gpustat output",
    source=SRC,
    sniff=looks_like_gpustat,
    parse=parse_gpustat,
    rank=60,
    near=_near,
    example="gpustat --json",
)
