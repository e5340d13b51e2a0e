"""``lscpu`` on its own (flat, or util-linux's tree layout): the CPU section of a profile.

collect_env's CPU block is lscpu's output, so both are read by one parser
(:func:`hwadvisor.importers.collect_env.parse_collect_env`); here the facts carry ``lscpu``.
"""

from __future__ import annotations

from hwadvisor.importers.base import Imported, Sample, empty_profile
from hwadvisor.importers.collect_env import CollectEnvError, lscpu_cut, parse_collect_env
from hwadvisor.importers.evidence import KeyIndex, keys_found, line_keys
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source

#: lscpu's keys (flat and tree layouts, util-linux 2.2x to 2.40); the ones that say what the
#: CPU is count for more.
_INDEX = KeyIndex(
    {
        **dict.fromkeys(
            (
                "Architecture",
                "CPU op-mode(s)",
                "Byte Order",
                "Address sizes",
                "On-line CPU(s) list",
                "Off-line CPU(s) list",
                "CPU family",
                "Model",
                "Thread(s) per core",
                "Core(s) per socket",
                "Core(s) per cluster",
                "Socket(s)",
                "Cluster(s)",
                "Stepping",
                "CPU MHz",
                "CPU max MHz",
                "CPU min MHz",
                "CPU(s) scaling MHz",
                "BogoMIPS",
                "Virtualization",
                "Hypervisor vendor",
                "Virtualization type",
                "L1d cache",
                "L1i cache",
                "L2 cache",
                "L3 cache",
                "NUMA node(s)",
                "Flags",
                "Frequency boost",
                "Caches (sum of all)",
                "NUMA",
                "Vulnerabilities",
            ),
            1.0,
        ),
        "CPU(s)": 2.0,
        "Model name": 2.0,
        "Vendor ID": 1.5,
    },
    # A BSD clone of lscpu names two keys its own way.
    aliases={"Total CPU(s)": "CPU(s)", "Vendor": "Vendor ID"},
)
#: What the CPU section must hold to be read: its CPU count, and its model or vendor.
_CORE = ("CPU(s)", "Model name", "Vendor ID")


def _lscpu_body(text: str) -> str | None:
    """``lscpu`` output from its first line on (a prompt, fences or other commands before it
    left out; a first line cut part-way, or a key that lost a letter, written whole), or None
    when none of the first lines is one of lscpu's."""
    lines = text.split("\n")
    keys = dict(line_keys(text))
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    start = next(
        (
            i
            for i in range(min(len(lines), 8))
            if i in keys and _INDEX.match(keys[i], first=i == first)
        ),
        None,
    )
    if start is None:
        return None
    body = []
    for i, line in enumerate(lines[start:], start):
        key = keys.get(i)
        known = _INDEX.match(key, first=i == start) if key else None
        if key and known and known != " ".join(key.split()):
            line = line.replace(key, known, 1)
        body.append(line.rstrip())
    return "\n".join(body)


def lscpu_score(text: str) -> float:
    """Sure for lscpu output whose body has its CPU count and model or vendor; else by how many
    of its keys the text's lines start with (never likely without the CPU count or model)."""
    body = _lscpu_body(text)
    if body is None:
        return 0.0
    found = keys_found(body, _INDEX)
    if "CPU(s)" in found and ("Model name" in found or "Vendor ID" in found):
        return 1.0
    core = any(key in found for key in _CORE)
    return min(0.95 if core else 0.45, sum(found.values()) / 6)


def looks_like_lscpu(text: str) -> bool:
    """``lscpu`` output on its own: one of its lines near the start, and the CPU count and
    model or vendor."""
    return lscpu_score(text[:65536]) >= 1.0


def parse_lscpu(text: str) -> Imported:
    """``lscpu`` output read as collect_env's CPU section (which is lscpu's output)."""
    body = _lscpu_body(text)
    if body is None:
        raise CollectEnvError("no lscpu line among the first lines")
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
    score=lambda sample: lscpu_score(sample.head),
    parse=lambda sample: parse_lscpu(sample.text),
    rank=90,
    near=_near,
    example="lscpu",
)
