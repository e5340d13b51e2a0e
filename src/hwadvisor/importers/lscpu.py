"""``lscpu`` on its own (flat, or util-linux's tree layout): the CPU section of a profile.

collect_env's CPU block is lscpu's output, so both are read by one parser
(:func:`hwadvisor.importers.collect_env.parse_collect_env`); here the facts carry ``lscpu``.
"""

from __future__ import annotations

import re

from hwadvisor.importers.base import Imported, Sample, empty_profile
from hwadvisor.importers.collect_env import CollectEnvError, lscpu_cut, parse_collect_env
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source

_LSCPU_ARCH = re.compile(r"^\s*Architecture:\s+\S+")


def _lscpu_body(text: str) -> str | None:
    """``lscpu`` output from its "Architecture:" line on (a prompt, fences or other commands
    before it left out), or None when the text does not start with it within a few lines."""
    lines = text.splitlines()
    for index, line in enumerate(lines[:8]):
        if _LSCPU_ARCH.match(line):
            return "\n".join(line.rstrip() for line in lines[index:])
    return None


def looks_like_lscpu(text: str) -> bool:
    """``lscpu`` output on its own: its "Architecture:" line near the start, and the CPU
    count and model or vendor."""
    body = _lscpu_body(text[:65536])
    return (
        body is not None
        and re.search(r"(?m)^\s*CPU\(s\):", body) is not None
        and re.search(r"(?m)^\s*(?:Model name|Vendor ID):", body) is not None
    )


def parse_lscpu(text: str) -> Imported:
    """``lscpu`` output read as collect_env's CPU section (which is lscpu's output)."""
    body = _lscpu_body(text)
    if body is None:
        raise CollectEnvError("no lscpu 'Architecture:' line")
    cpu = parse_collect_env("CPU:\n" + body, Source.LSCPU).cpu
    return Imported(empty_profile(cpu=cpu), truncated=lscpu_cut(body.splitlines()))


def _near(sample: Sample) -> str | None:
    body = _lscpu_body(sample.head)
    if body is not None and not looks_like_lscpu(sample.head):
        return "looks like lscpu output but has no 'CPU(s):' or 'Model name:' line"
    return None


FORMAT = Format(
    name="lscpu output",
    source=Source.LSCPU,
    sniff=lambda sample: looks_like_lscpu(sample.head),
    parse=lambda sample: parse_lscpu(sample.text),
    rank=90,
    near=_near,
    example="lscpu",
)
