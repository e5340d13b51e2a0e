"""The benchmark plan and the child-side runner that executes it case by case.

The parent (``hwadvisor.benchrun``) builds a :class:`BenchPlan`; the child runs
:func:`run_plan`, a generator whose items stream back one by one, so that a case that hangs
costs only itself: the parent stops the child and starts a new one for the cases left.

Items are dicts: ``{"event": "start", "id": ...}`` when a case begins, then one
``{"event": "result", "id": ..., "kind": ..., "data": {...}}`` per result the case produces
(``kind`` is ``measurement``, ``telemetry``, ``crossover``, ``peer_copy``, ``all_reduce``,
``cpu_load`` (the CPU load and what was done about it, after each CPU case) or ``device`` (a
GPU's identity, when a case first opens it)),
and ``{"event": "end", "id": ...}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from hwadvisor.model.bench import (
    AllReduce,
    BenchDevice,
    BenchStatus,
    CpuLoad,
    Crossover,
    Measurement,
    PeerCopy,
    TelemetrySample,
)
from hwadvisor.model.facts import StrictModel


@dataclass(frozen=True)
class CaseDef:
    """A case as its module declares it: what it runs, where, and its share of the budget.

    The parent's plan reads these declarations (each case module's ``PLAN``); a new case is one
    function, one ``CASES`` line and one ``PLAN`` line beside it.
    """

    kind: str
    """The key of the case function in its module's ``CASES``."""
    case: str
    """The measurement's case name in the profile (``matmul``, ``conv2d`` ...)."""
    device: str
    """``cpu``, ``gpu`` (one per visible CUDA/ROCm GPU) or ``mps``."""
    share: float
    """Seconds at the default budget (tuned on a 2-core VM: within 5 % of a 10× longer run)."""
    precision: str | None = None
    variant: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    peak: str | None = None
    """The peak the figure is compared with: ``cpu_fp32``, ``gpu_compute`` (the precision's
    dense peak), ``gpu_bandwidth``, ``pcie``, or None (no peak: latencies, samples/s)."""
    emulated_share: float | None = None
    """The share where the CPU has no native unit for ``precision`` (a tiny size is measured)."""
    needs_gpu: bool = False
    """Planned only when the machine has a GPU (the CPU half of the crossover sweep)."""


class CaseSpec(StrictModel):
    """One case to run: what, where, at which precision, and its share of the time budget."""

    id: str
    """Unique and stable, e.g. ``cpu.matmul.fp32`` or ``cuda:0.h2d.pinned``."""
    title: str
    kind: str
    """Which function runs it: a key of the case registry (``cpu_matmul``, ``gpu_matmul`` ...)."""
    case: str
    """The measurement's case name in the profile: ``matmul``, ``conv2d``, ``triad`` ..."""
    device: str = "cpu"
    precision: str | None = None
    variant: str | None = None
    seconds: float = 0.5
    """This case's share of the budget; the parent stops the child at a multiple of it."""
    params: dict[str, Any] = Field(default_factory=dict)


class BenchPlan(StrictModel):
    threads: int = 1
    """Usable CPUs: the threads of an idle machine (fewer are used while others hold cores)."""
    seed: int = 0
    retry_budget_s: float = 0.0
    """Time the CPU cases may spend in all on second runs after a passing load."""
    cases: list[CaseSpec] = Field(default_factory=list)


@dataclass
class BenchContext:
    """What cases share inside one child: torch, the thread count, results of earlier cases."""

    torch: Any
    threads: int
    seed: int
    shared: dict[str, Any] = field(default_factory=dict)
    """For example the CPU's measured matmul rates, reused by the crossover sweep."""
    usable: int = 0
    """The usable CPUs of the profile: the threads on an idle machine."""
    load: Any = None
    """The CPU load state of the child (``hwadvisor.probes.bench.cpu.CpuLoadState``)."""


CaseFunction = Callable[[CaseSpec, BenchContext], Iterator[BaseModel]]

_KINDS: dict[type[BaseModel], str] = {
    Measurement: "measurement",
    TelemetrySample: "telemetry",
    Crossover: "crossover",
    PeerCopy: "peer_copy",
    AllReduce: "all_reduce",
    CpuLoad: "cpu_load",
    BenchDevice: "device",
}


def registry() -> dict[str, CaseFunction]:
    """Case kinds and their functions (imported here, in the child, not at module import)."""
    from hwadvisor.probes.bench import cpu, gpu, mps, multi

    return {**cpu.CASES, **gpu.CASES, **multi.CASES, **mps.CASES}


def declared() -> list[CaseDef]:
    """Every single-device case the modules declare, in plan order (CPU, GPU, Apple GPU)."""
    from hwadvisor.probes.bench import cpu, gpu, mps

    return [*cpu.PLAN, *gpu.PLAN, *mps.PLAN]


def failed(case: CaseSpec, message: str, status: BenchStatus = BenchStatus.FAILED) -> Measurement:
    """A measurement that did not happen, with the reason."""
    return Measurement(
        case=case.case,
        device=case.device,
        precision=case.precision,
        variant=case.variant,
        status=status,
        message=message,
    )


def run_plan(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Child entry point: run every case of ``plan`` in order, streaming events."""
    spec = BenchPlan.model_validate(plan)
    load = None
    if any(case.device == "cpu" for case in spec.cases):
        from hwadvisor.probes.bench.cpu import start_load_watch

        # The import of torch (a second or so) doubles as the first look at the CPU load.
        load = start_load_watch(spec.threads, spec.retry_budget_s)
    try:
        import torch
    except ImportError as exc:
        for case in spec.cases:
            yield {"event": "start", "id": case.id}
            data = failed(case, f"torch is not importable: {exc}", BenchStatus.SKIPPED).model_dump(
                mode="json"
            )
            yield {"event": "result", "id": case.id, "kind": "measurement", "data": data}
            yield {"event": "end", "id": case.id}
        return
    torch.manual_seed(spec.seed)
    torch.set_num_threads(max(1, spec.threads))
    ctx = BenchContext(
        torch=torch, threads=spec.threads, seed=spec.seed, usable=spec.threads, load=load
    )
    cases = registry()
    for case in spec.cases:
        yield {"event": "start", "id": case.id, "time": time.time()}
        func = cases.get(case.kind)
        results: Iterator[BaseModel]
        if func is None:
            results = iter([failed(case, f"unknown case kind {case.kind!r}")])
        else:
            results = func(case, ctx)
        try:
            for result in results:
                yield {
                    "event": "result",
                    "id": case.id,
                    "kind": _KINDS[type(result)],
                    "data": result.model_dump(mode="json"),
                }
        except (RuntimeError, ValueError, TypeError, AttributeError, MemoryError, OSError) as exc:
            # torch reports most failures as RuntimeError (CUDA errors, unsupported dtypes).
            why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            data = failed(case, why).model_dump(mode="json")
            yield {"event": "result", "id": case.id, "kind": "measurement", "data": data}
        yield {"event": "end", "id": case.id}
