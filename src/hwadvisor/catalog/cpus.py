"""``cpus.toml``: processors people run models on without a GPU, as a what-if (``advise
--serve MODEL --assume-cpu NAME``).

Each row gives what sizes serving on a CPU: the memory bus (its width and the fastest memory
the vendor supports, whose product is the peak bandwidth) and the cores' FP32 peak, with its
sources. The serving model's CPU efficiencies were fitted on rows given the same way (the
fastest memory a chip takes), so a catalog CPU is read as those were.

A CPU is found by a word people type for it (``7950X``, ``i9-13900K``, ``Pi 5``, ``Graviton4``)
as a whole word of what they typed, the longest such word winning (``7950X3D`` before
``7950X``). What they add beside the name is read too: the RAM (``64GB``) and the memory's
speed (``DDR5-6000``, ``LPDDR5X-8533``), which then replaces the vendor's figure.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.schema import (
    DataModel,
    Positive,
    PositiveWhole,
    Text,
    choice,
    distinct_entries,
    load_toml,
)
from hwadvisor.catalog.toml import packaged_text
from hwadvisor.errors import UsageError

__all__ = [
    "CPUS_RESOURCE",
    "SEGMENTS",
    "AssumedCpu",
    "CpuSpec",
    "all_cpus",
    "find_cpu",
    "resolve_cpu",
]

CPUS_RESOURCE = "cpus.toml"
SEGMENTS = ("desktop", "server", "laptop", "board")
"""Where a chip is used: desktops and workstations, servers, laptops (and mini PCs on laptop
chips), single-board computers."""


class _Cpu(DataModel):
    name: Text
    match: list[Text]
    segment: Annotated[str, choice(*SEGMENTS)]
    vendor: Text
    cores: PositiveWhole
    threads: PositiveWhole
    memory: Text
    """The fastest memory the vendor supports, as ``DDR5-5200``."""
    bus_bits: PositiveWhole
    bandwidth_gbs: Positive
    fp32_tflops: Positive
    flops_note: Text
    memory_gb: Positive
    """The RAM assumed where none is named: a desktop's usual, a board's or a laptop's least."""
    source: Text
    note: str = ""


class _Cpus(DataModel):
    cpu: list[_Cpu]


@dataclass(frozen=True)
class CpuSpec:
    """One processor of the catalog."""

    name: str
    match: tuple[str, ...]
    segment: str
    vendor: str
    cores: int
    threads: int
    memory: str
    bus_bits: int
    bandwidth_gbs: float
    fp32_tflops: float
    memory_gb: float
    source: str
    note: str = ""


@dataclass(frozen=True)
class AssumedCpu:
    """A CPU as the user named it: the row, the RAM and the memory's speed, and what was
    assumed of them."""

    spec: CpuSpec
    memory_gb: float
    bandwidth_gbs: float
    note: str | None


_MEMORY_SPEED = re.compile(r"\b(LP)?DDR(\d)X?[- ]?(\d{4,5})\b", re.IGNORECASE)
_RAM = re.compile(r"\b(\d{1,4})\s*(GB|GiB)\b(?!/s)", re.IGNORECASE)


def parse_cpus(text: str, origin: str = CPUS_RESOURCE) -> tuple[CpuSpec, ...]:
    """The catalog in ``text``; :class:`CatalogError` naming the row for a bad one, or for a
    bandwidth that is not its bus times its memory's speed."""
    rows = load_toml(_Cpus, text, origin, CatalogError).cpu
    distinct_entries(rows, "cpu", lambda r: r.name, "name")
    specs = []
    for index, row in enumerate(rows, start=1):
        speed = _MEMORY_SPEED.search(row.memory)
        if speed is None:
            raise CatalogError(
                f"{origin}: cpu {index} ({row.name}): memory {row.memory!r} names no speed"
            )
        peak = row.bus_bits / 8 * int(speed.group(3)) / 1000
        if abs(peak - row.bandwidth_gbs) > 0.01 * peak:
            raise CatalogError(
                f"{origin}: cpu {index} ({row.name}): bandwidth_gbs {row.bandwidth_gbs} is not "
                f"{row.bus_bits} bits x {speed.group(3)} MT/s = {peak:.1f} GB/s"
            )
        specs.append(
            CpuSpec(
                name=row.name,
                match=tuple(row.match),
                segment=row.segment,
                vendor=row.vendor,
                cores=row.cores,
                threads=row.threads,
                memory=row.memory,
                bus_bits=row.bus_bits,
                bandwidth_gbs=row.bandwidth_gbs,
                fp32_tflops=row.fp32_tflops,
                memory_gb=row.memory_gb,
                source=row.source,
                note=row.note,
            )
        )
    words: dict[str, str] = {}
    for spec in specs:
        for word in (*spec.match, spec.name):
            owner = words.setdefault(_key(word), spec.name)
            if owner != spec.name:
                raise CatalogError(f"{origin}: {word!r} names both {owner} and {spec.name}")
    return tuple(specs)


@lru_cache(maxsize=1)
def all_cpus() -> tuple[CpuSpec, ...]:
    """The packaged catalog (read once a process: only a CPU what-if needs it)."""
    return parse_cpus(packaged_text(CPUS_RESOURCE))


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


def find_cpu(text: str) -> CpuSpec | None:
    """The row one of whose words (or its whole name) is a whole word run of ``text``, the
    longest such match winning; None where none is."""
    typed = f" {_key(text)} "
    best: tuple[int, CpuSpec] | None = None
    for spec in all_cpus():
        for word in (*spec.match, spec.name):
            key = _key(word)
            if key and f" {key} " in typed and (best is None or len(key) > best[0]):
                best = (len(key), spec)
    return best[1] if best else None


def resolve_cpu(text: str) -> AssumedCpu:
    """``text`` as a CPU with its RAM and memory speed (a usage error naming the nearest
    rows where no row is named)."""
    spec = find_cpu(text)
    if spec is None:
        words = {_key(w): s.name for s in all_cpus() for w in (*s.match, s.name)}
        typed = [w for w in _key(_RAM.sub(" ", text)).split() if any(c.isdigit() for c in w)]
        near: list[str] = []
        for word in typed or [_key(text)]:
            for close in difflib.get_close_matches(word, list(words), n=3, cutoff=0.6):
                if words[close] not in near:
                    near.append(words[close])
        raise UsageError(
            f"--assume-cpu {text!r}: no such CPU in the catalog"
            + (f"; closest: {', '.join(near[:3])}" if near else "")
            + " (`hwadvisor cpus` lists them)"
        )
    notes = []
    ram = _RAM.search(text)
    if ram:
        memory_gb = float(ram.group(1))
    else:
        memory_gb = spec.memory_gb
        notes.append(f"{memory_gb:g} GB of RAM assumed (name it, as '{spec.match[0]} 64GB')")
    bandwidth = spec.bandwidth_gbs
    speed = _MEMORY_SPEED.search(text)
    if speed:
        bandwidth = spec.bus_bits / 8 * int(speed.group(3)) / 1000
        notes.append(
            f"memory at {speed.group(0).upper()} as named: {bandwidth:.1f} GB/s on its "
            f"{spec.bus_bits}-bit bus (the vendor's {spec.memory}: {spec.bandwidth_gbs:.1f})"
        )
    return AssumedCpu(spec, memory_gb, bandwidth, "; ".join(notes) or None)
