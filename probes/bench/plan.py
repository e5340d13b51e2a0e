"""The benchmark plan and the child-side runner that executes it case by case.

The parent (``hwadvisor.benchrun``) builds a :class:`BenchPlan`; the child runs
:func:`run_plan`, a generator whose items stream back one by one, so that a case that hangs
costs only itself: the parent stops the child and starts a new one for the cases left.

Items are dicts: ``{"event": "start", "id": ...}`` when a case begins, then one
``{"event": "result", "id": ..., "kind": ..., "data": {...}}`` per result the case produces
(``kind`` is ``measurement``, ``telemetry``, ``crossover``, ``peer_copy`` or ``all_reduce``),
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
    BenchStatus,
    Crossover,
    Measurement,
    PeerCopy,
    TelemetrySample,
)
from hwadvisor.model.facts import StrictModel


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
    seed: int = 0
    cases: list[CaseSpec] = Field(default_factory=list)


@dataclass
class BenchContext:
    """What cases share inside one child: torch, the thread count, results of earlier cases."""

    torch: Any
    threads: int
    seed: int
    shared: dict[str, Any] = field(default_factory=dict)
    """For example the CPU's measured matmul rates, reused by the crossover sweep."""


CaseFunction = Callable[[CaseSpec, BenchContext], Iterator[BaseModel]]

_KINDS: dict[type[BaseModel], str] = {
    Measurement: "measurement",
    TelemetrySample: "telemetry",
    Crossover: "crossover",
    PeerCopy: "peer_copy",
    AllReduce: "all_reduce",
}


def registry() -> dict[str, CaseFunction]:
    """Case kinds and their functions (imported here, in the child, not at module import)."""
    from hwadvisor.probes.bench import cpu, gpu, mps, multi

    return {**cpu.CASES, **gpu.CASES, **multi.CASES, **mps.CASES}


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
    ctx = BenchContext(torch=torch, threads=spec.threads, seed=spec.seed)
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
