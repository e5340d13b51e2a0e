"""Every format ``hwadvisor import`` reads, in the order they are tried.

A new format is one module with a ``FORMAT`` and one line in :data:`_MODULES`; nothing else
(detection, the CLI's help, error messages, merging) names formats.
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


def detect(sample: Sample) -> Format | None:
    """The first format whose sniffer takes ``sample``, or None."""
    for candidate in formats():
        if candidate.sniff(sample):
            return candidate
    return None


def closest(sample: Sample) -> str | None:
    """For text no format took: what it almost is, from the formats' ``near`` hints."""
    for candidate in formats():
        if candidate.near is not None:
            hint = candidate.near(sample)
            if hint:
                return hint
    return None
