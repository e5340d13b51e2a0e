"""Several files that describe one machine, merged into one profile.

``hwadvisor import collect_env.txt nvidia-smi-q.txt lscpu.txt``: each fact is taken from the most
specific file that states it (the format's ``rank``: a tool that reads the hardware beats one that
relays it; files of equal rank in the order given), keeps that file's ``source``, and every fact
two files state differently is reported as a conflict with the value kept and the one set aside.
GPUs are matched by PCI bus id, then UUID, then name and position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import GpuInfo, ImportConflict, Profile

#: Sections a file speaks for as a whole (what is merged fact by fact).
_SECTIONS = ("cpu", "memory", "storage", "platform", "nvml", "frameworks")

#: Numbers closer than this (relative) are the same reading (81559 MiB and 80 GiB are not).
_TOLERANCE = 0.005


@dataclass
class Part:
    """One input: the file it came from, its format, and its profile."""

    origin: str
    format: Format
    profile: Profile


@dataclass
class _Merge:
    origins: dict[str, str] = field(default_factory=dict)
    """Where the value kept at each path came from: a whole section or GPU taken from a file is
    recorded once, at its own path (paths under none listed: the base file)."""
    conflicts: list[ImportConflict] = field(default_factory=list)
    base: str = ""

    def origin(self, path: str) -> str:
        """The file the value kept at ``path`` came from: the nearest recorded path at or above
        it (``cpu.logical_cores`` taken with the whole ``cpu`` section of the second file is
        that file's, not the base file's)."""
        while True:
            if path in self.origins:
                return self.origins[path]
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                return self.base
            path = path[:cut]


def merge(parts: list[Part]) -> tuple[Profile, list[ImportConflict]]:
    """One profile from ``parts`` (at least one), and the facts they disagree on."""
    ordered = sorted(parts, key=lambda part: -part.format.rank)  # stable: ties keep file order
    profile = ordered[0].profile.model_copy(deep=True)
    state = _Merge(base=ordered[0].origin)
    for part in ordered[1:]:
        other = part.profile
        for name in _SECTIONS:
            mine, theirs = getattr(profile, name), getattr(other, name)
            if not _any_known(mine):
                if _any_known(theirs):
                    setattr(profile, name, theirs.model_copy(deep=True))
                    state.origins[name] = part.origin
                continue
            _merge_model(mine, theirs, name, part.origin, state)
        _merge_gpus(profile.gpus, other.gpus, part.origin, state)
        if not profile.gpu_topology and other.gpu_topology:
            profile.gpu_topology = [link.model_copy(deep=True) for link in other.gpu_topology]
    return profile, state.conflicts


def _any_known(model: BaseModel) -> bool:
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, Fact):
                if item.known:
                    return True
            elif isinstance(item, BaseModel) and _any_known(item):
                return True
    return False


def _merge_model(mine: BaseModel, theirs: BaseModel, path: str, origin: str, state: _Merge) -> None:
    for name in type(mine).model_fields:
        here, there = getattr(mine, name), getattr(theirs, name)
        where = f"{path}.{name}"
        if isinstance(here, Fact) and isinstance(there, Fact):
            if not there.known:
                continue
            if not here.known:
                setattr(mine, name, there.model_copy(deep=True))
                state.origins[where] = origin
            elif not same(here.value, there.value):
                state.conflicts.append(
                    ImportConflict(
                        fact=where,
                        kept=f"{_show(here.value)} ({state.origin(where)})",
                        dropped=f"{_show(there.value)} ({origin})",
                    )
                )
        elif isinstance(here, BaseModel) and isinstance(there, BaseModel):
            if not _any_known(here) and _any_known(there):
                setattr(mine, name, there.model_copy(deep=True))
                state.origins[where] = origin
            else:
                _merge_model(here, there, where, origin, state)
        elif isinstance(here, list) and isinstance(there, list) and not here and there:
            setattr(mine, name, [_copy(item) for item in there])
            state.origins[where] = origin


def _copy(item: Any) -> Any:
    return item.model_copy(deep=True) if isinstance(item, BaseModel) else item


def _merge_gpus(mine: list[GpuInfo], theirs: list[GpuInfo], origin: str, state: _Merge) -> None:
    taken: set[int] = set()
    added: list[GpuInfo] = []
    for position, gpu in enumerate(theirs):
        match = _match(mine, gpu, position, taken)
        if match is None:
            added.append(gpu)
            continue
        taken.add(id(match))
        _merge_model(match, gpu, f"gpus[{match.index}]", origin, state)
    for gpu in added:
        copy = gpu.model_copy(deep=True, update={"index": len(mine)})
        mine.append(copy)
        state.origins[f"gpus[{copy.index}]"] = origin


def _match(mine: list[GpuInfo], gpu: GpuInfo, position: int, taken: set[int]) -> GpuInfo | None:
    free = [candidate for candidate in mine if id(candidate) not in taken]
    for key in ("pci_bus_id", "uuid"):
        value = getattr(gpu, key).value
        if value is None:
            continue
        for candidate in free:
            theirs = getattr(candidate, key).value
            if theirs is not None and str(theirs).lower() == str(value).lower():
                return candidate
    name = gpu.name.value
    at = next((c for c in free if c.index == gpu.index), None)
    if at is None and position < len(mine) and id(mine[position]) not in taken:
        at = mine[position]
    if name is not None:
        if at is not None and at.name.value is not None and same(at.name.value, name):
            return at
        # Same model elsewhere (sources order GPUs differently): the first free one.
        named = [c for c in free if c.name.value is not None and same(c.name.value, name)]
        if named:
            return named[0]
    if at is None:
        return None
    # Two ids that differ are two GPUs, whatever their positions.
    for key in ("pci_bus_id", "uuid"):
        if getattr(gpu, key).known and getattr(at, key).known:
            return None
    return at


_CUT = re.compile(r"(?:\.\.\.|…)$")


def same(a: Any, b: Any) -> bool:
    """Whether two values are one reading: names alike but for case, spacing and a table's
    ``...`` cut; versions where one extends the other (``535.104`` and ``535.104.05``); numbers
    within half a percent; lists where one holds the other."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        scale = max(abs(a), abs(b))
        return bool(scale == 0 or abs(a - b) <= _TOLERANCE * scale)
    if isinstance(a, str) and isinstance(b, str):
        x, y = _norm(a), _norm(b)
        if x == y:
            return True
        if _CUT.search(a) or _CUT.search(b):
            x, y = _norm(_CUT.sub("", a)), _norm(_CUT.sub("", b))
            return x.startswith(y) or y.startswith(x)
        if re.fullmatch(r"[\d.]+", x) and re.fullmatch(r"[\d.]+", y):
            return f"{x}.".startswith(f"{y}.") or f"{y}.".startswith(f"{x}.")
        return False
    if isinstance(a, list) and isinstance(b, list):
        left, right = {str(v) for v in a}, {str(v) for v in b}
        return left <= right or right <= left
    return bool(a == b)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[-_]", " ", text).lower().split())


def _show(value: Any) -> str:
    if isinstance(value, list):
        text = ", ".join(str(v) for v in value[:6]) + (", …" if len(value) > 6 else "")
        return f"[{text}]"
    return repr(value) if isinstance(value, str) else str(value)
