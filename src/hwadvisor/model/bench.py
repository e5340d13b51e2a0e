"""The ``benchmarks`` section of a profile: what the machine measurably does."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from hwadvisor.model.facts import StrictModel


class BenchStatus(str, Enum):
    OK = "ok"
    SKIPPED = "skipped"
    """Not run: the hardware or the torch build cannot do it (the message says why)."""
    FAILED = "failed"
    TIMEOUT = "timeout"
    """The case hung or ran past its limit; the child was stopped and the scan went on."""


class Confidence(str, Enum):
    HIGH = "high"
    LOW = "low"
    """Spread above 10 %, or too few blocks: a noisy machine or a too-short time share."""


class Disturbance(str, Enum):
    """Why a figure is not this machine's capability, though it was measured correctly."""

    CPU_CONTENDED = "cpu_contended"
    """Other processes ran on the cores this case's threads needed: the figure is low."""
    FEWER_THREADS = "fewer_threads"
    """Measured with fewer threads than usable CPUs, because other processes held the rest: an
    honest figure for that thread count, not the whole machine's."""
    GPU_BUSY = "gpu_busy"
    """Other processes had work on the GPU (NVML's process list or utilization)."""
    GPU_THROTTLED = "gpu_throttled"
    """The GPU slowed its clocks for heat or power (hardware/thermal slowdown, power brake)."""
    GPU_SHARED = "gpu_shared"
    """A slice of a GPU (MIG instance) or a GPU shared through MPS: not the whole card."""


class Measurement(StrictModel):
    """One benchmark case on one device."""

    case: str
    """matmul, conv2d, triad, device_copy, h2d, d2h, launch_latency, train_step."""
    device: str
    """``cpu`` or ``cuda:N`` (ROCm GPUs are ``cuda:N`` too; Apple GPUs ``mps``)."""
    precision: str | None = None
    """fp32 (TF32 off), tf32, fp16, bf16, fp8, amp; null where it does not apply."""
    variant: str | None = None
    """pinned / pageable for transfers."""
    status: BenchStatus = BenchStatus.OK
    message: str | None = None
    unit: str = ""
    """GFLOP/s, GB/s, us, samples/s."""
    higher_is_better: bool = True
    best: float | None = None
    """The headline: the best block (more stable than the median on noisy machines)."""
    median: float | None = None
    spread: float | None = None
    """Interquartile range / median of the blocks."""
    blocks: int = 0
    reps_per_block: int = 0
    seconds: float = 0.0
    """Wall time spent on the case, warm-up included."""
    first_call_seconds: float | None = None
    """The first call (CUDA context, library handles, JIT), timed apart from the measurement."""
    params: dict[str, int | float | str] = Field(default_factory=dict)
    """Problem sizes actually used (after any out-of-memory halving)."""
    settings: dict[str, str] = Field(default_factory=dict)
    """Precision and library settings in force (float32 matmul precision, cudnn flags, threads)."""
    confidence: Confidence = Confidence.HIGH
    threads: int | None = None
    """CPU threads the case ran with (CPU cases)."""
    other_cpus: float | None = None
    """CPUs' worth of time other processes used, on the CPUs this case could run on, while it
    ran (CPU cases); null where it cannot be known."""
    disturbances: list[Disturbance] = Field(default_factory=list)
    """Conditions that make the figure something other than this machine's capability."""
    disturbance_note: str | None = None
    """The conditions in words, with the figures behind them."""
    attempts: int = 1
    """How many times the case ran: a case disturbed by a passing load is run again once."""
    peak: float | None = None
    """The device's theoretical peak for this case, in ``unit``."""
    peak_basis: str | None = None
    efficiency: float | None = None
    """best / peak, as a fraction; null (with a note) when the peak is unknown or implausible."""
    efficiency_note: str | None = None

    @property
    def trusted(self) -> bool:
        """Whether the figure may stand for this machine: measured, undisturbed, consistent."""
        return (
            self.status == BenchStatus.OK
            and self.best is not None
            and not self.disturbances
            and self.confidence == Confidence.HIGH
        )

    @property
    def free_cores_only(self) -> bool:
        """Whether the figure's only flaw is that it ran on the free cores while other
        processes held the rest: consistent and undisturbed there (the advice scales it)."""
        return (
            self.status == BenchStatus.OK
            and self.best is not None
            and self.disturbances == [Disturbance.FEWER_THREADS]
            and self.confidence == Confidence.HIGH
        )


class TelemetrySample(StrictModel):
    """The GPU's state around a case (NVML), to spot throttling."""

    device: str
    case: str
    when: str
    """before or after."""
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_watts: float | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    utilization_percent: int | None = None
    """GPU utilization over NVML's last sample period (others' kernels count too)."""
    other_processes: int | None = None
    """Compute processes on the GPU other than the benchmark's own."""


class CrossoverPoint(StrictModel):
    n: int
    cpu_gflops: float | None = None
    gpu_gflops: float | None = None
    gpu_with_transfer_gflops: float | None = None
    """Copying both inputs to the GPU and the result back is counted in the time."""


class Crossover(StrictModel):
    """Square FP32 matmul of size n on the CPU against one GPU."""

    device: str
    points: list[CrossoverPoint] = Field(default_factory=list)
    cpu_faster_below_n: int | None = None
    """Below this n the CPU is faster than the GPU (kernel only); null if never/always."""
    cpu_faster_below_n_with_transfer: int | None = None
    note: str | None = None


class TrainingSpeedup(StrictModel):
    """The small-CNN training step: GPU samples/s over CPU samples/s."""

    device: str
    cpu_samples_per_s: float
    gpu_samples_per_s: float
    speedup: float


class PeerCopy(StrictModel):
    src: str
    dst: str
    gb_per_s: float | None = None
    status: BenchStatus = BenchStatus.OK
    message: str | None = None


class AllReduce(StrictModel):
    backend: str
    """nccl on GPUs; gloo for the CPU path."""
    world_size: int
    size_bytes: int
    algbw_gbs: float | None = None
    busbw_gbs: float | None = None
    """Bus bandwidth = algbw × 2(n−1)/n, comparable across GPU counts (as nccl-tests)."""
    status: BenchStatus = BenchStatus.OK
    message: str | None = None


class CpuLoad(StrictModel):
    """What other processes did to the CPUs around the benchmark phase, and what was done."""

    cpus: int | None = None
    """CPUs the benchmarks could run on (the affinity set)."""
    usable_cpus: int | None = None
    """Usable CPUs of the profile (affinity and cgroup quota): the threads of an idle machine."""
    other_cpus_before: float | None = None
    """CPUs' worth of time other processes used just before the CPU cases."""
    threads_chosen: int | None = None
    """Threads the first CPU case ran with: the usable CPUs less the ones others held."""
    waited_seconds: float = 0.0
    """Time spent waiting for a passing load to end before measuring."""
    retried: list[str] = Field(default_factory=list)
    """Cases run a second time because a load came up while they ran."""
    note: str | None = None


class BenchDevice(StrictModel):
    """The identity of a benchmark device, resolved once in the child: ``cuda:N`` → the GPU."""

    device: str
    name: str | None = None
    uuid: str | None = None
    """NVML's spelling (``GPU-…``, ``MIG-…``)."""
    pci_bus_id: str | None = None


class Benchmarks(StrictModel):
    status: BenchStatus = BenchStatus.OK
    message: str | None = None
    budget_seconds: float = 0.0
    duration_seconds: float = 0.0
    threads: int | None = None
    """CPU threads torch used (= usable CPUs)."""
    other_cpu_load: float | None = None
    """Share of the CPUs other processes used while measuring (above 0.10 the CPU figures are
    flagged low confidence); null where it cannot be known."""
    load: CpuLoad | None = None
    devices: list[BenchDevice] = Field(default_factory=list)
    """Each ``cuda:N`` of the measurements with its GPU's UUID and bus id."""
    torch_version: str | None = None
    measurements: list[Measurement] = Field(default_factory=list)
    telemetry: list[TelemetrySample] = Field(default_factory=list)
    crossover: list[Crossover] = Field(default_factory=list)
    training_speedup: list[TrainingSpeedup] = Field(default_factory=list)
    peer_copies: list[PeerCopy] = Field(default_factory=list)
    all_reduce: AllReduce | None = None
