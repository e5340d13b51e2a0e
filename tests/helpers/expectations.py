"""What a person reading a paste would state about the machine, checked against what the import
read: the yardstick of ``benchmarks/import_coverage.py`` and ``tests/test_import_expected.py``.

Each ``[[paste]]`` of an expectations file names a recorded paste and what its text states —
written by reading the text, never by running the importer. Keys (all but ``file`` and
``format`` optional): ``gpus`` (count, the GPUs the text counts but does not show included),
``gpu`` (words every GPU's name or catalog row contains: "A100"; GPUs not shown are skipped),
``vram_gib`` (the first GPU's memory, within 3 %), ``driver``, ``cpu`` (words of the CPU
model), ``logical_cores``, ``physical_cores``, ``memory_gib`` (system RAM, within 3 %),
``hostname``, ``truncated`` (whether the text is visibly cut off), ``finding`` (an id the import
must report), ``refused`` (words the one-line message must hold where the text cannot give a
useful profile: a clinfo with CPU devices only, a tegrastats line that fits several modules).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from hwadvisor.errors import InputError
from hwadvisor.importers.detect import detect_format, import_text
from hwadvisor.model.profile import NOT_SHOWN, Profile

_KEYS = {
    "file",
    "format",
    "gpus",
    "gpu",
    "vram_gib",
    "driver",
    "cpu",
    "logical_cores",
    "physical_cores",
    "memory_gib",
    "hostname",
    "truncated",
    "finding",
    "refused",
    "note",
}


@dataclass
class Verdict:
    file: str
    format: str
    misses: list[str]

    @property
    def right(self) -> bool:
        return not self.misses


def refused(path: Path) -> set[str]:
    """The pastes of an expectations file that give no useful profile: the import refuses them
    in one line (``refused``), so tests that import every recording leave them out."""
    return {entry["file"] for entry in load(path) if "refused" in entry}


def load(path: Path) -> list[dict[str, Any]]:
    """The ``[[paste]]`` entries of an expectations file (unknown keys refused)."""
    entries: list[dict[str, Any]] = tomllib.loads(path.read_text(encoding="utf-8"))["paste"]
    for entry in entries:
        unknown = set(entry) - _KEYS
        if unknown:
            raise ValueError(f"{path.name}: {entry.get('file')}: unknown keys {sorted(unknown)}")
    return entries


def check(entry: dict[str, Any], folder: Path) -> Verdict:
    """Import the paste and list every way what it read differs from what the text states."""
    text = (folder / entry["file"]).read_text(encoding="utf-8")
    misses: list[str] = []
    found = detect_format(text)
    if found != entry["format"]:
        misses.append(f"format: read as {found!r}, is {entry['format']!r}")
        return Verdict(entry["file"], entry["format"], misses)
    try:
        profile = import_text(text, entry["file"])
    except InputError as exc:
        wanted = entry.get("refused")
        if wanted and str(wanted).lower() in str(exc).lower() and "\n" not in str(exc):
            return Verdict(entry["file"], entry["format"], [])
        return Verdict(entry["file"], entry["format"], [f"not imported: {exc}"])
    if "refused" in entry:
        return Verdict(entry["file"], entry["format"], ["imported, but the text should be refused"])
    misses += _compare(entry, profile)
    return Verdict(entry["file"], entry["format"], misses)


def _near(value: float | None, wanted: float) -> bool:
    return value is not None and abs(value - wanted) <= 0.03 * wanted


def _compare(entry: dict[str, Any], profile: Profile) -> list[str]:
    misses = []
    gpus = profile.gpus
    if "gpus" in entry and len(gpus) != entry["gpus"]:
        misses.append(f"gpus: {len(gpus)}, text states {entry['gpus']}")
    if "gpu" in entry:
        words = entry["gpu"].lower().split()
        for gpu in gpus:
            if gpu.name.reason == NOT_SHOWN:
                continue  # counted by the text, not shown in it: nothing to name
            said = f"{gpu.name.value or ''} {gpu.catalog_name.value or ''}".lower()
            if not all(word in said for word in words):
                misses.append(f"gpu {gpu.index}: {gpu.name.value!r}, text states {entry['gpu']!r}")
                break
    if "vram_gib" in entry:
        value = gpus[0].vram_total_bytes.value if gpus else None
        if not _near(value / 2**30 if value else None, entry["vram_gib"]):
            misses.append(f"vram: {value}, text states {entry['vram_gib']} GiB")
    if "driver" in entry and profile.nvml.driver_version.value != entry["driver"]:
        misses.append(
            f"driver: {profile.nvml.driver_version.value!r}, text states {entry['driver']!r}"
        )
    cpu = profile.cpu
    if "cpu" in entry:
        model = (cpu.model_name.value or "").lower()
        if not all(word in model for word in entry["cpu"].lower().split()):
            misses.append(f"cpu: {cpu.model_name.value!r}, text states {entry['cpu']!r}")
    for key in ("logical_cores", "physical_cores"):
        if key in entry and getattr(cpu, key).value != entry[key]:
            misses.append(f"{key}: {getattr(cpu, key).value}, text states {entry[key]}")
    if "memory_gib" in entry:
        total = profile.memory.total_bytes.value
        if not _near(total / 2**30 if total else None, entry["memory_gib"]):
            misses.append(f"memory: {total}, text states {entry['memory_gib']} GiB")
    if "hostname" in entry and profile.host.hostname.value != entry["hostname"]:
        misses.append(
            f"hostname: {profile.host.hostname.value!r}, text states {entry['hostname']!r}"
        )
    ids = {finding.id for finding in profile.findings}
    cut = "input-truncated" in ids
    if "truncated" in entry and cut != entry["truncated"]:
        misses.append(f"truncated: {cut}, text is {'cut' if entry['truncated'] else 'whole'}")
    if "finding" in entry and entry["finding"] not in ids:
        misses.append(f"finding {entry['finding']} missing")
    return misses
