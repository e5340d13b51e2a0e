"""The ``advice`` section: the whole answer for one workload, built once by the advice engine and
rendered by every output (terminal, HTML, PDF, JSON, diff, the fleet).

A scenario is a class of hardware (1 a CPU, 2 one GPU, 3 one machine with several GPUs or one
cloud instance of up to 8, 4 more than one machine); the user's deadline decides: the scenario
is the smallest class with an option that holds the job in memory and meets the deadline, and
the recommendation is the cheapest such option of that class."""

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
    training: str | None = None
    """How it is trained where not plain full training with AdamW ("QLoRA, rank 16 on a 4-bit
    base (40M trained parameters); paged AdamW 8-bit")."""
    shape_assumed: str | None = None
    """The transformer shape the advice assumed because none was given, said in full."""
    times: str = ""
    """What every time includes and what its range means."""


class ScenarioInfo(StrictModel):
    id: int
    """The class of hardware the workload needs within the deadline: 1 a CPU; 2 one GPU (a card
    for a desk, or one rented GPU); 3 one machine with several GPUs, or one cloud instance of up
    to 8; 4 more than one machine."""
    title: str
    confidence: str
    """high (the estimates' whole band leads to the same class), medium otherwise."""
    rule: str
    """How the class was decided: ``smallest-class-meeting-deadline``, ``gpu-far-faster`` (a
    CPU meets the deadline but one GPU is over 10× faster on a run of over an hour),
    ``classical-on-cpu``, or ``nothing-meets`` (no option within the scale-out limit)."""
    because: str
    """Why this class and not the one below, with the figure that decided."""


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
    plan_kind: str | None = None
    """The plan as data: ``fits``, ``smaller_batch``, ``checkpointing``, ``does_not_fit``."""
    plan_batch: int | None = None
    """The micro-batch of the plan (None where nothing fits)."""
    plan_accumulation: int = 1
    plan_checkpointing: bool = False
    plan_bytes: int | None = None
    """Memory per device of the plan (of batch 1, with checkpointing where allowed, where
    nothing fits)."""
    usable_bytes: int | None = None
    """Memory per device a training job can use."""
    meets_scenario: bool | None = None
    """Holds the job in memory and meets the deadline (``deadline_hours``); a CPU also only
    where no single GPU is over 10× faster on a run of over an hour (the rules' settings)."""
    scenario_class: int = 0
    """The class of this option: 1 a CPU, 2 one GPU, 3 one machine of 2–8 GPUs, 4 several
    machines (0 in profiles written before classes were given)."""
    memory_from_catalog: bool = False
    """This machine's GPU memory was not in the profile and was taken from the GPU catalog."""
    calibrated: bool = False
    """The rate comes from this machine's measurements, not only from catalog peaks."""
    basis: str = ""
    purchase_cost: float | None = None
    hourly_cost: float | None = None
    run_cost: float | None = None
    """Renting it for this one run: hourly cost × hours."""
    break_even_hours: float | None = None
    """Hours of use after which buying costs less than renting (purchase ÷ (hourly rent −
    hourly energy cost of owning it))."""
    energy_cost: float | None = None
    """Electricity for this one run on owned hardware: board power × hours × price per kWh."""
    break_even_runs: float | None = None
    """Runs of this workload after which buying costs less than renting."""
    rent_as: str | None = None
    """The cloud instance the hourly price is for: ``AWS p5.48xlarge (8× H100 SXM)``."""
    price_date: str | None = None
    """The oldest date among the prices used (YYYY-MM-DD or YYYY-MM)."""
    price_source: str | None = None
    price_note: str | None = None
    """What the price covers, or why there is none."""


class Recommendation(StrictModel):
    """What to buy or rent: the cheapest option of the scenario's class that holds the job in
    memory and meets the deadline (ties by time)."""

    hardware: str
    origin: str
    """candidate (the ladder), assumed (--assume-gpu), this-machine (what this machine has is
    the only option of its class that meets it), or scale-out."""
    scenario_class: int
    gpus: int = 0
    nodes: int = 1
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    fits_memory: bool | None = None
    memory_plan: str | None = None
    purchase_cost: float | None = None
    hourly_cost: float | None = None
    run_cost: float | None = None
    energy_cost: float | None = None
    break_even_runs: float | None = None
    break_even_hours: float | None = None
    rent_as: str | None = None
    price_date: str | None = None
    price_source: str | None = None
    price_note: str | None = None


class ClassBelow(StrictModel):
    """The class under the scenario's, and what its best option failed."""

    scenario_class: int
    title: str
    hardware: str | None = None
    """Its option that came closest (holds the job and is fastest; else the one with the most
    memory); None where the class has no option for this workload."""
    failed: str
    """``deadline`` (holds it, too slow), ``memory`` (does not hold it), ``unknown`` (no
    estimate), ``gpu-far-faster`` (a CPU within the deadline, one GPU over 10× faster)."""
    seconds: float | None = None
    memory_needed_bytes: int | None = None
    memory_available_bytes: int | None = None
    text: str
    """The failure in words, with its figure: "one 24 GB GPU (RTX 4090 class) needs 30.6 h,
    over your 24 h"."""


class KeyFigure(StrictModel):
    """One figure behind the verdict, as every output shows it."""

    label: str
    value: float | None = None
    unit: str = ""
    text: str
    """The value as shown: "178 GFLOP/s", "13.7 GiB of 22.4 GiB", "15.2×"."""
    detail: str = ""


class AssumedVerdict(StrictModel):
    """The verdict for hardware the user asked about with ``--assume-gpu``."""

    hardware: str
    scenario_class: int
    sufficient: bool
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    fits_memory: bool | None = None
    note: str | None = None
    """How the name was read ("“H100” taken as H100 SXM")."""


class ThisMachine(StrictModel):
    sufficient: bool
    """Enough: its best option holds the job in memory and meets the deadline."""
    verdict: str = ""
    """``enough``, ``not enough``, or ``not confirmed`` (a fact that decides is unknown: see
    ``checks``); empty in profiles written before verdicts were named."""
    checks: list[str] = Field(default_factory=list)
    """What to check where the verdict is not confirmed."""
    scenario_class: int = 0
    """The class of its best option."""
    hardware: str
    seconds: float | None = None
    low_seconds: float | None = None
    high_seconds: float | None = None
    limit_hours: float
    """The deadline a run must meet (``Advice.deadline_hours``)."""
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
    """For all the nodes together, renting the node's cloud instance."""
    run_cost: float | None = None
    purchase_cost: float | None = None
    """Buying the nodes (their servers; the network between them is not counted)."""
    meets: bool = True
    """Whether the nodes meet the deadline (False: "not even N nodes")."""
    summary: str
    """The answer in words: "16 × H100 SXM (2 nodes of 8) meet it in about 5 days"."""


class TraceEntry(StrictModel):
    """One class of hardware as the engine weighed it: its best option, and whether it holds
    the job in memory and meets the deadline (``rule`` is ``class-N``)."""

    rule: str
    scenario: int
    matched: bool
    evidence: dict[str, str | float | bool | None] = Field(default_factory=dict)
    because: str = ""


class Advice(StrictModel):
    workload: WorkloadSummary
    deadline_hours: float = 0.0
    """The time one run must fit in (``--deadline``; the rules' default, 24 h)."""
    scenario: ScenarioInfo
    this_machine: ThisMachine
    recommendation: Recommendation | None = None
    class_below: ClassBelow | None = None
    if_you_can_wait: str | None = None
    """The class below meets it given more time: "within 31 h on one 24 GB GPU …"."""
    assumed: list[AssumedVerdict] = Field(default_factory=list)
    estimates: list[HardwareEstimate] = Field(default_factory=list)
    trace: list[TraceEntry] = Field(default_factory=list)
    """One entry per class, 1 to 4: its best option and whether it holds the job and meets
    the deadline."""
    what_ifs: list[str] = Field(default_factory=list)
    """Only what changes the answer: another deadline, more memory, this machine's time."""
    key_figures: list[KeyFigure] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)
    """Busy-machine figures set aside or scaled, assumed hardware, memory from the catalog,
    prices older than a year."""
    scale_out: ScaleOut | None = None
    """Scenario 4 when no single machine meets it: the number of nodes that does."""
    assumptions: list[str] = Field(default_factory=list)
    rules_source: str = "built-in"
    prices_source: str | None = None
    prices_date: str | None = None
    """The oldest price date behind the recommendation's costs."""
    currency: str | None = None
    kwh_price: float | None = None
    """Electricity price used for energy costs, per kWh in ``currency``."""
