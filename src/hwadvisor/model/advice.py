"""The ``advice`` section: the scenario a workload needs, whether this machine meets it, and why."""

from __future__ import annotations

from pydantic import Field

from hwadvisor.model.facts import StrictModel


class WorkloadSummary(StrictModel):
    name: str
    description: str
    kind: str
    """conv, transformer or classical."""
    precision: str
    total_flops: float | None = None
    """Training FLOPs of the whole run (null for classical work, counted in core-seconds)."""
    memory_bytes: int | None = None
    """Training memory: weights, gradients, optimizer states and one batch's activations."""
    source: str = ""
    notes: str = ""


class ScenarioInfo(StrictModel):
    id: int
    """1 CPU is enough; 2 one reasonable GPU; 3 a deep-learning workstation or cloud GPU
    instances; 4 a multi-GPU cluster or cloud at scale."""
    title: str
    confidence: str
    """high, medium (the estimate's band straddles a threshold), or low."""
    rule: str
    """The id of the rule that decided."""
    because: str


class HardwareEstimate(StrictModel):
    """Time to train the workload on one piece of hardware."""

    hardware: str
    origin: str
    """this-machine, candidate (the ladder in the rules file) or assumed (--assume-gpu)."""
    gpus: int = 0
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    fits_memory: bool | None = None
    memory_needed_bytes: int | None = None
    """At the workload's batch on one device, before any accumulation or checkpointing."""
    memory_available_bytes: int | None = None
    memory_plan: str | None = None
    """How it fits: "fits as given", "fits at batch 64 (gradient accumulation ×4 keeps the
    effective batch of 256)", "fits only with gradient checkpointing", "does not fit …"."""
    meets_scenario: bool | None = None
    """Fast enough for the scenario's time limit and fits in memory."""
    calibrated: bool = False
    """The rate comes from this machine's measurements, not only from catalog peaks."""
    basis: str = ""
    purchase_cost: float | None = None
    hourly_cost: float | None = None
    run_cost: float | None = None
    """Renting it for this one run: hourly cost × hours."""
    break_even_hours: float | None = None
    """Hours of use after which buying costs less than renting."""


class ThisMachine(StrictModel):
    sufficient: bool
    hardware: str
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    limit_hours: float
    """The scenario's time limit a run must meet."""
    fits_memory: bool | None = None
    reasons: list[str] = Field(default_factory=list)


class ScaleOut(StrictModel):
    """Scenario 4: how many nodes of the ladder's largest rung meet the time limit."""

    hardware: str
    """What one node is, e.g. ``8× H100 SXM cloud node``."""
    gpu: str
    gpus: int
    nodes: int
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    fits_memory: bool | None = None
    hourly_cost: float | None = None
    """For all the nodes together, when ``--prices`` gave one node's price."""
    run_cost: float | None = None
    summary: str
    """The answer in words: "16 × H100 SXM (2 nodes of 8) meet it in about 5 days"."""


class TraceEntry(StrictModel):
    """One rule as the engine evaluated it, with the facts it looked at."""

    rule: str
    scenario: int
    matched: bool
    evidence: dict[str, str | float | bool | None] = Field(default_factory=dict)
    because: str = ""


class Advice(StrictModel):
    workload: WorkloadSummary
    scenario: ScenarioInfo
    this_machine: ThisMachine
    estimates: list[HardwareEstimate] = Field(default_factory=list)
    trace: list[TraceEntry] = Field(default_factory=list)
    what_ifs: list[str] = Field(default_factory=list)
    scale_out: ScaleOut | None = None
    """Scenario 4 when no single rung meets it: the number of nodes that does."""
    assumptions: list[str] = Field(default_factory=list)
    rules_source: str = "built-in"
    prices_source: str | None = None
    currency: str | None = None
