"""``rocm-smi`` output as people paste it, and how an AMD GPU gets its name.

Read here, alone or several in one paste (a bug report often has ``rocm-smi`` and
``rocm-smi --showmeminfo vram`` one after the other):

- the concise table plain ``rocm-smi`` prints, in its three layouts: ROCm 1 to 5
  (``GPU  Temp  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%``, columns varying), ROCm 6.0
  and 6.1 (``Device  [Model : Revision]  Temp  Power  Partitions ...``, each GPU's name on the
  line under its row), and ROCm 6.2 on (``Device  Node  IDs  Temp  Power  Partitions ...``, the
  PCI device id under ``IDs``). Cells are read by the header's words: split on two or more
  spaces where the row has as many cells as the header, else by the words' positions;
- the ``GPU[0]  : Card series: ...`` lines of ``--showproductname``, ``--showmeminfo vram``,
  ``--showdriverversion``, ``-i``, ``-a`` (``--showallinfo``) and the like;
- the same fields as ``--csv`` (a ``device,...`` header, ``card0,...`` rows, ``cardsystem``
  for the driver) or ``--json`` (``{"card0": {...}, "system": {"Driver version": ...}}``).

Log prefixes in front of every line (``nid005113 out: ``) are taken off. On AMD the
``architecture`` fact is the gfx target ("gfx942"), as the amdsmi probe records it.

Naming (:func:`name_amd_gpu`, shared with ``amd-smi``): the name the tool printed is kept when
the GPU catalog knows it; a useless one ("0x738c", "Device 66a1", "N/A", a bare gfx target, or
a board string no catalog row matches) gives way to the catalog row found by the PCI id, or —
only when no PCI id was printed — by the gfx target and the memory. Such a name carries
``source: catalog`` and the import's notes say what the tool printed.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.catalog.peaks import find_gpu_by_pci_id, find_gpu_by_target, find_gpu_peak
from hwadvisor.importers.base import Imported, ImportFormatError, Sample, empty_profile, new_gpu
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo

SRC = Source.ROCM_SMI
MISSING = "not in the rocm-smi output"
#: What AMD GPUs' compute capability is in every AMD importer.
NO_CUDA_CAPABILITY = "CUDA compute capability does not apply to AMD GPUs"

_BANNER = re.compile(r"ROCm System Management Interface")
_FOOTER = re.compile(r"End of ROCm SMI Log")
#: A banner with a log prefix in front ("nid005113 out: ====== ROCm System ..."), matched on
#: the 200 characters before the words only (see :func:`_banner_prefix`).
_PREFIXED_BANNER = re.compile(r"^([^=.]*?\S[^=.]*?)[=.]{3,}\s*$")
_BANNER_WORDS = "ROCm System Management"
_CONCISE_HEADER = re.compile(
    r"^\s*(?:GPU\s+Temp\b|Device\s+(?:Node\s+IDs\b|\[Model\s*:\s*Revision\]))"
)
_KV_LINE = re.compile(r"^\s*GPU\[(\d+)\](\s+XCP\[\d+\])?\s*:\s?(.*)$")
_KV_KEYS = (
    r"Card [Ss]eries|Card [Mm]odel|VRAM Total|GPU ID|Device (?:Name|ID)|GFX Version|"
    r"Temperature|Unique ID|PCI Bus|Serial Number|"
    r"(?:Average|Current Socket|Max) Graphics Package Power|GPU use"
)
_KV_SNIFF = re.compile(rf"(?m)^\s*GPU\[\d+\][^:\n]*:\s*(?:{_KV_KEYS})")
_CSV_HEADER = re.compile(
    r"(?m)^device,(?:[^\n]*,)?(?:Card [Ss]eries|Card [Mm]odel|VRAM Total Memory \(B\)|"
    r"GFX Version|Driver version|GPU use \(%\)|GPU ID|Device Name|Device ID|Unique ID)"
)
_CSV_ROW = re.compile(r"(?m)^card(?:\d+|system),")
_JSON_CARD = re.compile(r'"card\d+"\s*:\s*\{')
_JSON_KEYS = re.compile(
    r'"(?:Card [Ss]eries|Card [Mm]odel|GPU ID|Device (?:Name|ID)|VRAM Total Memory \(B\)|'
    r'GFX Version|Unique ID|PCI Bus|GPU use \(%\)|Temperature \(Sensor [a-z]+\) \([Cc]\))"\s*:'
)
_SEPARATOR = re.compile(r"^\s*[=\-.]{5,}\s*$")
_ROW_START = re.compile(r"^\s*\d+(?:\s{2,}|\s*$)")
_HEX_ID = re.compile(r"(?:0x|\bDevice\s+)([0-9a-fA-F]{4})\b")
_NA = {"", "n/a", "na", "unknown", "unsupported", "not supported", "none", "null"}
_MIB = 2**20

#: rocm-smi's field names (lower case, no trailing colon) → what they are.
_KEYS = {
    "card series": "series",
    "device name": "device_name",
    "marketing name": "device_name",
    "card model": "card_model",
    "device id": "device_id",
    "gpu id": "device_id",
    "vram total memory (b)": "vram_total",
    "vram total used memory (b)": "vram_used",
    "gfx version": "target",
    "temperature (sensor edge) (c)": "temp_edge",
    "temperature (sensor junction) (c)": "temp_junction",
    "temperature": "temp",
    "average graphics package power (w)": "power",
    "current socket graphics package power (w)": "power",
    "max graphics package power (w)": "power_cap",
    "gpu use (%)": "util",
    "pci bus": "bus",
    "serial number": "serial",
    "unique id": "unique_id",
    "sclk clock level": "sclk",
    "sclk clock speed": "sclk",
    "mclk clock level": "mclk",
    "mclk clock speed": "mclk",
}


class RocmSmiError(ImportFormatError):
    """The text holds no GPU rocm-smi described."""


# --------------------------------------------------------------------------------------------
# Shared with amd-smi: values, gfx targets, names


def present(value: Any) -> str | None:
    """``value`` as text, or None for what AMD's tools print for "nothing" (N/A, Unknown ...) and
    for a value the poster masked (``<redacted>``, ``0x9246____________``)."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in _NA or "____" in text or re.fullmatch(r"<[^<>]*>", text):
        return None
    return text


def normalize_gfx_target(text: str | None) -> str | None:
    """A gfx target as LLVM and the catalog write it (``gfx90a``), or None.

    rocm-smi before ROCm 6.2 printed the KFD version number in decimal digits, so gfx90a
    (9, 0, 10) appears as ``gfx9010`` and gfx1100 in some versions as ``gfx11000``; target
    features (``gfx90a:sramecc+:xnack-``) are dropped.
    """
    value = present(text)
    if value is None:
        return None
    value = value.strip().lower().split(":", 1)[0]
    match = re.fullmatch(r"gfx(\d+)([0-9a-f]?)", value)
    if match is None:
        return None
    digits, letter = match.groups()
    if not letter and len(digits) == 4 and digits[0] in "6789":
        # gfx9010: major 9, minor 0, stepping 10 (hex a).
        return f"gfx{digits[0]}{digits[1]}{int(digits[2:]):x}"
    if not letter and len(digits) == 5 and digits[:2] in ("10", "11", "12"):
        return f"gfx{digits[:2]}{digits[2]}{int(digits[3:]):x}"
    return value


def device_id(value: Any) -> str | None:
    """The 4-digit PCI device id in a value ("0x74a1", "[0x74a1 : 0x00]", "0x74a1,  28851",
    "Device 66a1")."""
    text = present(value)
    if text is None:
        return None
    match = _HEX_ID.search(text)
    return match.group(1).lower() if match else None


def _useless_name(name: str) -> bool:
    """A "name" that names no model: a hex id, "Device 66a1", a bare gfx target."""
    lowered = name.strip().lower()
    return bool(
        re.fullmatch(r"(?:0x)?[0-9a-f]{3,4}", lowered)
        or re.fullmatch(r"device [0-9a-f]{4}", lowered)
        or re.fullmatch(r"(?:amd )?gfx[0-9a-f]+(?::\S*)?", lowered)
    )


def name_amd_gpu(
    index: int,
    printed: list[str | None],
    *,
    device_ids: list[str],
    weak_device_ids: list[str] | None = None,
    target: str | None,
    memory_bytes: int | None,
    source: Source,
    tool: str,
) -> tuple[Fact[str], str | None]:
    """The name fact of an AMD GPU, and the note to add when the catalog named it.

    ``printed`` are the tool's name fields, best first; ``device_ids`` the PCI device ids it
    printed as such ("74a1"); ``weak_device_ids`` fields that hold a device id in some
    versions only (rocm-smi's "Card model", a subsystem id before ROCm 6). A printed name the
    catalog knows wins; then the catalog row of a PCI id; then, when no PCI id was printed, the
    row of the gfx target and memory; then the printed name as it is.
    """
    shown = [name for name in (present(n) for n in printed) if name]
    useful = [name for name in shown if not _useless_name(name)]
    for name in useful:
        peak = find_gpu_peak(name, memory_bytes)
        if peak is not None and peak.origin == "catalog":
            return fact(name, source), None
    said = f"{tool} printed {shown[0]!r}" if shown else f"{tool} printed no model name"
    for did in [*device_ids, *(weak_device_ids or [])]:
        peak = find_gpu_by_pci_id(f"1002:{did}", memory_bytes)
        if peak is not None:
            note = f"GPU {index}: named from its PCI id 1002:{did} ({said})"
            return Fact(value=peak.name, source=Source.CATALOG), note
    if target and not device_ids and memory_bytes:
        peak = find_gpu_by_target(target, memory_bytes)
        if peak is not None:
            size = f"{memory_bytes / 2**30:.0f} GiB"
            note = f"GPU {index}: named from its gfx target {target} and {size} ({said})"
            return Fact(value=peak.name, source=Source.CATALOG), note
    if useful:
        return fact(useful[0], source), None
    return unknown(f"{said}; nothing else in it names the model", source), None


# --------------------------------------------------------------------------------------------
# Sniffing


def looks_like_rocm_smi(head: str) -> bool:
    """rocm-smi's concise table header, its ``GPU[n] : field:`` lines, its CSV or its JSON
    (behind a log prefix, too)."""
    if _banner_prefix(head):
        head = _unprefixed(head)
    if _KV_SNIFF.search(head) or (_CSV_HEADER.search(head) and _CSV_ROW.search(head)):
        return True
    if _JSON_CARD.search(head) and _JSON_KEYS.search(head):
        return True
    return any(_CONCISE_HEADER.match(line) for line in head.splitlines())


# --------------------------------------------------------------------------------------------
# Reading


@dataclass
class _Read:
    """What the text says, per GPU index: rocm-smi's fields under canonical keys."""

    gpus: dict[int, dict[str, str]] = field(default_factory=dict)
    driver: str | None = None
    cut: str | None = None

    def put(self, index: int, key: str, value: str | None) -> None:
        fields = self.gpus.setdefault(index, {})
        if value is not None and key not in fields:
            fields[key] = value


def parse_rocm_smi(sample: Sample) -> Imported:
    """Read rocm-smi output (text, CSV or JSON) into GPUs.

    Raises :class:`RocmSmiError` when no GPU is in it (a ``--showdriverversion`` alone).
    """
    read = _Read()
    document = sample.json
    if isinstance(document, dict) and any(re.fullmatch(r"card\d+", k) for k in document):
        _read_json(document, read)
        read.cut = sample.json_cut
    else:
        _read_text(_unprefixed(sample.text), read)
    if not read.gpus:
        what = f" (only the driver version, {read.driver})" if read.driver else ""
        raise RocmSmiError(f"no GPU in the rocm-smi output{what}")
    notes: list[str] = []
    gpus = [_gpu(index, read.gpus[index], notes) for index in sorted(read.gpus)]
    if read.driver:
        notes.insert(0, f"amdgpu driver version {read.driver} (rocm-smi 'Driver version')")
    return Imported(empty_profile(gpus=gpus), truncated=read.cut, notes=notes)


def _banner_prefix(text: str) -> str | None:
    """The log prefix in front of the first banner line that has one, or None. Linear: only
    the start of a banner line, up to 200 characters, is matched."""
    at = text.find(_BANNER_WORDS)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        if at - start <= 200:
            match = _PREFIXED_BANNER.match(text[start:at])
            if match:
                return match.group(1)
        at = text.find(_BANNER_WORDS, at + 1)
    return None


def _unprefixed(text: str) -> str:
    """The text without the log prefix its banner line shows in front of every line."""
    prefix = _banner_prefix(text)
    if prefix is None:
        return text
    lines = text.splitlines()
    return "\n".join(line[len(prefix) :] if line.startswith(prefix) else line for line in lines)


def _read_json(document: dict[str, Any], read: _Read) -> None:
    for key, card in document.items():
        if not isinstance(card, dict):
            continue
        if key == "system":
            for name, value in card.items():
                if _key(name) == "driver version":
                    read.driver = present(value)
            continue
        number = re.fullmatch(r"card(\d+)", key)
        if number:
            for name, value in card.items():
                _put_field(read, int(number.group(1)), name, value)


def _key(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip().rstrip(":").strip().lower()


def _put_field(read: _Read, index: int, name: str, value: Any) -> None:
    read.gpus.setdefault(index, {})
    canonical = _KEYS.get(_key(name))
    if canonical is not None:
        read.put(index, canonical, present(value))


def _read_text(text: str, read: _Read) -> None:
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    i = 0
    while i < len(lines):
        line = lines[i]
        if _CONCISE_HEADER.match(line):
            i = _read_concise(lines, i, read)
            continue
        if line.startswith("device,"):
            i = _read_csv(lines, i, read)
            continue
        kv = _KV_LINE.match(line)
        if kv is not None:
            if kv.group(2) is None:  # a partition's (XCP) line: the GPU's own line says it
                _read_kv(read, int(kv.group(1)), kv.group(3), cut=i == last)
        elif re.match(r"^\s*Driver version\s*:", line):
            read.driver = read.driver or present(line.split(":", 1)[1])
        i += 1
    banners = len(_BANNER.findall(text))
    if read.cut is None and banners and len(_FOOTER.findall(text)) < banners:
        read.cut = "the text stops before rocm-smi's 'End of ROCm SMI Log' line"


def _read_kv(read: _Read, index: int, rest: str, *, cut: bool) -> None:
    name, sep, value = rest.partition(":")
    if not sep:
        read.gpus.setdefault(index, {})
        return
    if cut and not value.strip():
        read.cut = read.cut or f"the text ends inside GPU {index}'s {name.strip()!r} line"
        read.gpus.setdefault(index, {})
        return
    _put_field(read, index, name, value.strip())


def _read_csv(lines: list[str], start: int, read: _Read) -> int:
    header = next(csv.reader([lines[start]]))
    i = start + 1
    while i < len(lines) and re.match(r"card(?:\d+|system),", lines[i]):
        row = next(csv.reader([lines[i]]))
        label = row[0]
        is_last = not any(line.strip() for line in lines[i + 1 :])
        if len(row) < len(header) and is_last:
            read.cut = read.cut or f"the CSV ends inside {label}'s row"
            row = row[:-1]  # its last value may be cut too
        if label == "cardsystem":
            for name, value in zip(header[1:], row[1:], strict=False):
                if _key(name) == "driver version":
                    read.driver = present(value)
        else:
            index = int(label[4:])
            for name, value in zip(header[1:], row[1:], strict=False):
                _put_field(read, index, name, value)
        i += 1
    return i


# --------------------------------------------------------------------------------------------
# The concise table


def _read_concise(lines: list[str], start: int, read: _Read) -> int:
    header = lines[start]
    columns = [(m.group(0), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    named_rows = "[Model" in header
    i = start + 1
    # Subheader lines ("(DID, GUID)  (Junction) ...", "Name (20 chars)") down to the "====" line;
    # the old layouts have neither.
    probe = i
    while probe < len(lines) and probe < start + 4 and not _SEPARATOR.match(lines[probe]):
        if _ROW_START.match(lines[probe]):
            break
        probe += 1
    if probe < len(lines) and _SEPARATOR.match(lines[probe]):
        i = probe + 1
    last_line = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    index: int | None = None
    while i < len(lines):
        line = lines[i]
        if _ROW_START.match(line):
            index = _concise_row(line, columns, read, cut=i == last_line)
        elif named_rows and index is not None and line.startswith(" ") and line.strip():
            name = line.strip()
            if not _SEPARATOR.match(line):
                read.put(index, "series", name)
            index = None
        else:
            break
        i += 1
    return i


def _cells(line: str, columns: list[tuple[str, int]]) -> list[str]:
    tokens = re.split(r"\s{2,}", line.strip())
    if len(tokens) == len(columns):
        return tokens
    cells = []
    for n, (_, begin) in enumerate(columns):
        end = columns[n + 1][1] if n + 1 < len(columns) else len(line)
        cells.append(line[begin:end].strip() if n else line[:end].strip())
    return cells


def _concise_row(line: str, columns: list[tuple[str, int]], read: _Read, *, cut: bool) -> int:
    cells = _cells(line.rstrip(), columns)
    index = int(line.split()[0])  # _ROW_START: the line starts with the index
    read.gpus.setdefault(index, {})
    filled = [n for n, cell in enumerate(cells) if cell]
    if cut and filled[-1] < len(columns) - 1:
        read.cut = read.cut or f"the concise table ends inside GPU {index}'s row"
        cells = cells[: filled[-1]]  # the last value shown may be cut short
    for (name, _), cell in zip(columns[1:], cells[1:], strict=False):
        column = name.split(" ", 1)[0].lower()
        if column.startswith("temp"):
            read.put(index, "temp", present(cell))
        elif column in ("avgpwr", "power"):
            read.put(index, "power", present(cell))
        elif column == "pwrcap":
            read.put(index, "power_cap", present(cell))
        elif column in ("sclk", "mclk") and name.upper() in ("SCLK", "MCLK"):
            read.put(index, column, present(cell))
        elif column == "gpu%":
            read.put(index, "util", present(cell))
        elif column in ("ids", "[model"):
            read.put(index, "device_id", present(cell))
    return index


# --------------------------------------------------------------------------------------------
# One GPU


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:°?\s*[cC]|W|%|[mM][hH]z)?", value.strip())
    return float(match.group(1)) if match else None


def _measure(value: str | None, what: str, *, integer: bool = False) -> Fact[Any]:
    if value is None:
        return unknown(f"rocm-smi printed no {what}", SRC)
    number = _number(value)
    if number is None:
        return unknown(f"unparseable {what} {value!r} in the rocm-smi output", SRC)
    return fact(round(number) if integer else number, SRC)


def _clock(value: str | None, what: str) -> Fact[int]:
    if value is None:
        return unknown(f"rocm-smi printed no {what}", SRC)
    match = re.search(r"(\d+)\s*[mM][hH]z", value)
    if match is None:
        return unknown(f"unparseable {what} {value!r} in the rocm-smi output", SRC)
    return fact(int(match.group(1)), SRC)


def _bytes(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())


def _gpu(index: int, fields: dict[str, str], notes: list[str]) -> GpuInfo:
    known: dict[str, Any] = {}
    total = _bytes(fields.get("vram_total"))
    used = _bytes(fields.get("vram_used"))
    if total:
        known["vram_total_bytes"] = fact(total, SRC)
    if used is not None:
        known["vram_used_bytes"] = fact(used, SRC)
    if total and used is not None:
        known["vram_free_bytes"] = fact(max(total - used, 0), Source.DERIVED)
    target = normalize_gfx_target(fields.get("target"))
    if target:
        known["architecture"] = fact(target, SRC)
    series = fields.get("series")
    strong = [d for d in (device_id(fields.get("device_id")),) if d]
    if series and _useless_name(series) and device_id(series):
        strong.append(device_id(series) or "")
    weak = [d for d in (device_id(fields.get("card_model")),) if d]
    name, note = name_amd_gpu(
        index,
        [series, fields.get("device_name")],
        device_ids=strong,
        weak_device_ids=weak,
        target=target,
        memory_bytes=total,
        source=SRC,
        tool="rocm-smi",
    )
    known["name"] = name
    if note:
        notes.append(note)
    temperature = fields.get("temp_edge") or fields.get("temp_junction") or fields.get("temp")
    known["temperature_c"] = _measure(temperature, "temperature", integer=True)
    known["power_draw_watts"] = _measure(fields.get("power"), "power draw")
    cap = _measure(fields.get("power_cap"), "power cap")
    if cap.value == 0:
        # The second die of an MI250X (and partitions) report no cap of their own.
        cap = unknown("rocm-smi reports a power cap of 0 W (a second die or partition)", SRC)
    known["power_limit_watts"] = cap
    known["utilization_percent"] = _measure(fields.get("util"), "utilisation", integer=True)
    known["sm_clock_mhz"] = _clock(fields.get("sclk"), "SCLK")
    known["memory_clock_mhz"] = _clock(fields.get("mclk"), "MCLK")
    if fields.get("bus"):
        known["pci_bus_id"] = fact(fields["bus"].lower(), SRC)
    if fields.get("serial"):
        known["serial"] = fact(fields["serial"], SRC)
    if fields.get("unique_id"):
        known["uuid"] = fact(fields["unique_id"], SRC)
    known["compute_capability"] = unknown(NO_CUDA_CAPABILITY, SRC)
    return new_gpu(index, vendor="amd", backend="rocm", source=SRC, missing=MISSING, **known)


def _near(sample: Sample) -> str | None:
    if _BANNER.search(sample.head) and not looks_like_rocm_smi(sample.head):
        return "looks like rocm-smi output but has no GPU table or 'GPU[n] :' lines"
    return None


FORMAT = Format(
    name="rocm-smi output",
    source=SRC,
    sniff=lambda sample: looks_like_rocm_smi(sample.head),
    parse=parse_rocm_smi,
    rank=80,
    near=_near,
    example="rocm-smi",
)
