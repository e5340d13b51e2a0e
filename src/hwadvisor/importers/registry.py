"""Every format ``hwadvisor import`` reads, in the order they are tried.

A new format is one module with a ``FORMAT`` and one line in :data:`_MODULES`; nothing else
(detection, the CLI's help, error messages, merging) names formats.

Detection weighs evidence: a format may give a ``score`` (how much of the text looks like it,
from several features: a paste that starts or ends part-way, lost a letter or comes from a fork
of the tool still scores), and a format with only ``sniff`` scores 1 when its sniffer takes the
text. The first format in :data:`_MODULES` order that is sure (:data:`SURE`) reads the text;
when none is, the one with the most evidence does, if it has enough (:data:`LIKELY`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from hwadvisor.importers.base import Imported, Sample
from hwadvisor.model.facts import Source


@dataclass(frozen=True)
class Format:
    """One format: what it is called, where its facts come from, how to spot and read it."""

    name: str
    """How a person calls it ("nvidia-smi -q text"); shown in messages and diagnostics."""
    source: Source
    """The source every fact it reads carries."""
    sniff: Callable[[Sample], bool]
    """Is the text this format? Cheap: it runs on every import, in :data:`_MODULES` order."""
    parse: Callable[[Sample], Imported]
    """Read it; raise :class:`~hwadvisor.importers.base.ImportFormatError` (one line) when the
    text is not readable after all."""
    rank: int
    """How specific its facts are when several files describe one machine: where two files
    disagree, the higher rank is kept (a tool that reads the hardware beats one that relays it)."""
    near: Callable[[Sample], str | None] | None = None
    """For text no format took: "looks like <this> but ..." when it almost is this format."""
    example: str = ""
    """The command that produces it, for the CLI's help."""
    score: Callable[[Sample], float] | None = None
    """Optional: how strongly the text looks like this format, from 0 (not at all) through
    :data:`LIKELY` (readable as it) to :data:`SURE` and above. Formats without one score by
    their ``sniff``."""

    def evidence(self, sample: Sample) -> float:
        """The format's score for ``sample`` (``sniff``'s yes as :data:`SURE` where it has no
        ``score``)."""
        if self.score is not None:
            return self.score(sample)
        return SURE if self.sniff(sample) else 0.0


#: A score at which a format is sure the text is its own (what a sniffer's yes means).
SURE = 1.0
#: The least score that reads the text as a format when no format is sure.
LIKELY = 0.5


#: Tried in this order; the first whose ``sniff`` says yes reads the file. Richer formats come
#: first (a bug report with collect_env and an nvidia-smi table pasted is read as collect_env).
_MODULES = (
    "hwadvisor.importers.collect_env",
    "hwadvisor.importers.nvidia_smi_xml",
    "hwadvisor.importers.system_profiler",
    "hwadvisor.importers.nvidia_smi_text",
    "hwadvisor.importers.nvidia_smi_table",
    "hwadvisor.importers.nvidia_smi_topo",
    "hwadvisor.importers.nvidia_smi_list",
    "hwadvisor.importers.nvidia_smi_csv",
    "hwadvisor.importers.rocm_smi",
    "hwadvisor.importers.amd_smi",
    "hwadvisor.importers.gpustat",
    "hwadvisor.importers.npu_smi",
    "hwadvisor.importers.xpu_smi",
    "hwadvisor.importers.sycl_ls",
    "hwadvisor.importers.clinfo",
    "hwadvisor.importers.jetson_release",
    "hwadvisor.importers.tegrastats",
    "hwadvisor.importers.inxi",
    "hwadvisor.importers.lshw",
    "hwadvisor.importers.lspci",
    "hwadvisor.importers.lscpu",
    "hwadvisor.importers.proc_cpuinfo",
)


@cache
def formats() -> tuple[Format, ...]:
    """Every registered format, in detection order."""
    return tuple(importlib.import_module(name).FORMAT for name in _MODULES)


def by_name(name: str) -> Format:
    """The format called ``name`` (KeyError for none)."""
    for candidate in formats():
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def scores(sample: Sample) -> list[tuple[Format, float]]:
    """Every format's score for ``sample``, in detection order."""
    return [(candidate, candidate.evidence(sample)) for candidate in formats()]


def detect(sample: Sample) -> Format | None:
    """The first format sure of ``sample``; else the one with the most evidence, when it has
    at least :data:`LIKELY`; else None."""
    best: Format | None = None
    best_score = 0.0
    for candidate in formats():
        score = candidate.evidence(sample)
        if score >= SURE:
            return candidate
        if score > best_score:
            best, best_score = candidate, score
    return best if best_score >= LIKELY else None


def closest(sample: Sample) -> str | None:
    """For text no format took: what it almost is (a format's ``near`` hint, or the format with
    the most evidence) and the command whose output to paste instead; None when nothing in it
    looks like any format."""
    for candidate in formats():
        if candidate.near is not None:
            hint = candidate.near(sample)
            if hint:
                return f"{hint}; paste the whole output of `{candidate.example}`"
    ranked = [(score, -i, f) for i, (f, score) in enumerate(scores(sample)) if score > 0]
    if not ranked:
        return None
    _, _, best = max(ranked, key=lambda item: (item[0], item[1]))
    return f"it looks most like {best.name}; paste the whole output of `{best.example}`"
