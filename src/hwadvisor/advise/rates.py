"""How fast each piece of hardware trains a workload, and whether it holds it in memory: the
ladder's rungs from the catalog, this machine from its measurements where they can be trusted."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hwadvisor.advise.files import (
    GIB,
    TYPICAL_MATMUL_EFFICIENCY,
    Candidate,
    Rules,
    is_datacenter,
    scenario_class,
)
from hwadvisor.advise.trust import (
    _distrust_note,
    _emulated,
    _measured,
    _ok,
    _per_core,
    bench_device,
)
from hwadvisor.catalog.model import band_for, model_params
from hwadvisor.catalog.peaks import (
    GpuPeak,
    cpu_peak_gflops,
    cpu_training_peak,
    find_gpu_peak,
)
from hwadvisor.memory import (
    FitVerdict,
    MemoryModelError,
    MemorySpec,
    activation_bytes,
    fit_verdict,
    memory_per_gpu,
    spec_from_workload,
)
from hwadvisor.methods import QLORA_SLOWDOWN, recompute_factor
from hwadvisor.model.profile import NOT_SHOWN, GpuInfo, Profile, assumed_like_shown
from hwadvisor.workloads import (
    Estimate,
    Workload,
    default_efficiency,
    estimate,
    estimate_cpu_work,
    hardware_rate,
    memory_traffic_per_sample,
    on_tensor_cores,
    training_flops_per_token,
    training_memory_bytes,
    vector_efficiency,
    width_factor,
)

# --------------------------------------------------------------------------------------------
# Rates


@dataclass
class Rate:
    """How fast a piece of hardware trains this workload, and what the figure rests on."""

    hardware: str
    origin: str
    gpus: int
    estimate: Estimate | None
    memory_available: int | None
    per_gpu_memory: int | None
    calibrated: bool = False
    notes: list[str] = field(default_factory=list)
    memory_from_catalog: bool = False
    """The profile lacks this machine's GPU memory: it is the catalog's."""
    gpu: str | None = None
    """The catalog name of the GPU (for prices); None for a CPU."""
    cores: int | None = None

    @property
    def scenario_class(self) -> int:
        return scenario_class(self.gpus)


def catalog_memory(peak: GpuPeak) -> int | None:
    """A catalog GPU's memory in bytes. GPU makers' "GB" are binary (an RTX 4090's 24 GB is
    24,564 MiB as the driver reports it; an A100 40GB's, 40,960 MiB): read as GiB, so that an
    assumed card fits what the same card scanned fits."""
    return int(peak.memory_gb * GIB) if peak.memory_gb else None


#: One training step launches about this many GPU kernels per transformer layer (forward about
#: 15: two layer norms, the QKV and output projections, attention, two MLP matmuls, the
#: activation, dropouts and residual adds; backward about twice as many), and eager PyTorch
#: spends the model's ``host_seconds_per_kernel`` on the host per kernel (dispatch, autograd,
#: launch). The GPU cannot run a step faster than the host issues it: small models and small
#: batches are bound by it.
KERNELS_PER_LAYER = 45


def _micro(w: Workload) -> int:
    """Samples per GPU per forward/backward pass: the micro-batch, else the batch."""
    return w.micro_batch or w.batch_size


def _step_flops(w: Workload) -> float | None:
    """Training FLOPs of one forward/backward pass on one GPU (its micro-batch)."""
    if w.kind == "transformer" and w.flops_per_token and w.sequence_length:
        return training_flops_per_token(w) * w.sequence_length * _micro(w)
    if w.flops_per_sample:
        return w.flops_per_sample * _micro(w)
    return None


def _traffic_per_flop(w: Workload) -> float | None:
    """Bytes moved through device memory per training FLOP: conv nets from their activation
    figure, transformers from their shape (or activation figure) — every stored activation is
    written, read back and passed through the element-wise layers both ways."""
    if w.kind == "conv":
        traffic = memory_traffic_per_sample(w)
        return traffic / w.flops_per_sample if traffic and w.flops_per_sample else None
    if w.kind != "transformer" or not w.flops_per_token or not w.sequence_length:
        return None
    try:
        one = replace(w, batch_size=1, micro_batch=None)
        stored = activation_bytes(spec_from_workload(one), checkpointing=False)
    except MemoryModelError:
        return None
    if stored <= 0:
        return None
    flops = training_flops_per_token(w) * w.sequence_length
    # The output logits count like any stored activation: eager frameworks up-cast them,
    # take the log-softmax and its gradient in separate passes (the fit preferred this to
    # counting them written and read once, as a fused loss would).
    return stored * model_params().traffic_per_activation_byte / flops


#: GPUs in one server: beyond it, gradients also cross the network between nodes.
GPUS_PER_NODE = 8
#: Share of a link's datasheet bandwidth (both directions) that NCCL/RCCL's ring all-reduce
#: reaches as "bus bandwidth" on large messages: nccl-tests report about 230 GB/s on DGX A100
#: (NVLink 600 GB/s) and about 25 GB/s between PCIe 4.0 GPUs (64 GB/s both ways).
LINK_EFFICIENCY = 0.4
#: Consumer cards have peer-to-peer transfers switched off (GeForce RTX 4090 and later) or not
#: validated: their all-reduce goes through host memory, at about half the speed.
CONSUMER_PCIE_FACTOR = 0.5
#: PCIe generation by GPU architecture (x16 link: 16 GB/s per direction per generation 3, doubling
#: with each generation).
PCIE_GENERATION = {
    "Kepler": 3,
    "Maxwell": 3,
    "Pascal": 3,
    "Volta": 3,
    "Turing": 3,
    "Ampere": 4,
    "Ada Lovelace": 4,
    "Hopper": 5,
    "Blackwell": 5,
    "CDNA": 4,
    "CDNA 2": 4,
    "CDNA 3": 5,
    "CDNA 4": 5,
    "RDNA 2": 4,
    "RDNA 3": 4,
    "RDNA 4": 5,
}
#: Share of a step's compute the gradient exchange hides behind: DDP overlaps it with the
#: backward pass (about 2/3 of the step); FSDP gathers every layer's weights again at each
#: micro-step, prefetching the next layer's while one computes (the model's ``fsdp_exposed``):
#: short micro-steps leave it exposed (sharded fine-tuning with small micro-batches).
DDP_OVERLAP = 2.0 / 3.0


def link_bandwidth(peak: GpuPeak) -> tuple[float, str]:
    """All-reduce bus bandwidth between GPUs of this model in one server (bytes/s), and what
    the link is: NVLink/Infinity Fabric where the catalog gives it, else PCIe."""
    if peak.gpu_link_gbs:
        return peak.gpu_link_gbs * 1e9 * LINK_EFFICIENCY, f"{peak.gpu_link_gbs:,.0f} GB/s GPU links"
    gen = PCIE_GENERATION.get(peak.architecture or "", 4)
    both_ways = 2 * 16.0 * 2 ** (gen - 3)
    factor = CONSUMER_PCIE_FACTOR if peak.gpu_class == "consumer" else 1.0
    via = ", through host memory" if factor < 1 else ""
    return both_ways * 1e9 * LINK_EFFICIENCY * factor, f"PCIe {gen}.0{via}"


def sharding(w: Workload, peak: GpuPeak, gpus: int, rules: Rules) -> str:
    """How several GPUs split the work: plain data parallel (DDP) when every GPU holds the
    whole model's states at a batch that fits; sharded states (FSDP/ZeRO-3) when they do not
    (and the rules allow it)."""
    if gpus <= 1 or not rules.shard_states:
        return "ddp"
    if not peak.memory_gb or w.kind == "classical":
        return "fsdp"
    plan = memory_plan(w, catalog_memory(peak), gpus, rules)
    return "ddp" if plan is not None and plan.message.endswith("(plain data parallel)") else "fsdp"


def _sync_per_flop(
    w: Workload, peak: GpuPeak, gpus: int, rules: Rules, flop_s: float
) -> tuple[float, str] | None:
    """Seconds per training FLOP that exchanging gradients (DDP: a ring all-reduce of the
    gradients; FSDP: reduce-scatter plus two all-gathers of the weights) adds beyond what the
    step hides, and how; None on one GPU or where nothing is exposed."""
    step = _step_flops(w)
    if gpus <= 1 or not step:
        return None
    trainable = w.trainable_parameters if w.trainable_parameters is not None else w.parameters
    width = 4.0 if w.precision in ("fp32", "tf32") else 2.0
    strategy = sharding(w, peak, gpus, rules)
    if strategy == "ddp":
        # Gradient accumulation skips the all-reduce but at the last micro-step (no_sync).
        step *= w.batch_size / _micro(w)
    if strategy == "ddp":
        volume = 2.0 * trainable * width  # ring all-reduce: reduce-scatter + all-gather
    else:
        # Every micro-step gathers every weight twice (forward, backward) at the weights' own
        # width and reduce-scatters the trained gradients.
        base = (w.base_bits or width * 8) / 8 if w.trainable_parameters is not None else width
        volume = 2.0 * w.parameters * base + trainable * width
    volume *= (gpus - 1) / gpus
    link, what = link_bandwidth(peak)
    seconds = volume / link
    if gpus > GPUS_PER_NODE:
        # Hierarchical: inside each server over its links, then 1/8 of it across the network.
        seconds += volume / GPUS_PER_NODE / (rules.network_gbs_per_gpu * 1e9)
        what = f"{what} and {rules.network_gbs_per_gpu:g} GB/s per GPU between servers"
    compute = step * flop_s
    if strategy == "ddp":
        exposed = seconds - DDP_OVERLAP * compute
    else:
        # Prefetching hides the shorter of compute and communication, less a share of it.
        exposed = max(0.0, seconds - compute) + model_params().fsdp_exposed * min(seconds, compute)
    if exposed <= 0:
        return None
    return (
        exposed / step,
        f"gradient exchange ({strategy.upper()}) over {what} adds {exposed * 1e3:.2g} ms per step",
    )


def _gpu_estimate(
    w: Workload,
    peak: GpuPeak,
    gpus: int,
    device_class: str,
    rules: Rules,
    derate: float = 1.0,
    efficiency: float | None = None,
    memory_bytes: int | None = None,
) -> Estimate | None:
    """Time on ``gpus`` GPUs like ``peak``: a step's arithmetic (peak × efficiency) and its
    memory traffic (bandwidth) overlap in part — the longer of the two plus the model's
    ``overlap`` share of the shorter — and the host's kernel launches bound it from below; the
    gradient exchange adds what the step cannot hide. Run as the memory plan for GPUs of
    ``memory_bytes`` says: at its micro-batch, with checkpointing's recomputation where it
    needs it."""
    rate = hardware_rate(peak, w.precision)
    if rate is None:
        return None
    w, slower, why = _as_planned(w, memory_bytes, gpus, rules)
    eff = efficiency if efficiency is not None else default_efficiency(w, device_class)
    if efficiency is None and not on_tensor_cores(peak, w.precision):
        vector = vector_efficiency(w)
        if vector is not None:
            eff = vector * width_factor(w)
    scale = 1 + (gpus - 1) * rules.multi_gpu_scaling
    eff = min(1.0, eff)
    compute_s = 1.0 / (rate * derate * eff)  # per FLOP
    p = model_params()
    bound = ""
    step = _step_flops(w)
    per_flop = _traffic_per_flop(w)
    gpu_s = compute_s
    if per_flop and peak.bandwidth_gbs:
        memory_s = per_flop / (peak.bandwidth_gbs * 1e9)
        gpu_s = max(compute_s, memory_s) + p.overlap * min(compute_s, memory_s)
        if memory_s > compute_s:
            moved = (
                f"about {per_flop * step / _micro(w) / 1e9:.2g} GB moved per sample" if step else ""
            )
            bound = f"memory-bound: {moved} at {peak.bandwidth_gbs:,.0f} GB/s"
    if w.layers and step:
        kernels = w.layers * KERNELS_PER_LAYER
        host_s = kernels * p.host_seconds_per_kernel
        if host_s / step > gpu_s:
            gpu_s = host_s / step
            bound = (
                f"launch-bound: {kernels:,} kernels per step of batch {_micro(w)} take "
                f"the host about {host_s * 1e3:.2g} ms"
            )
    eff *= compute_s / gpu_s
    sync = _sync_per_flop(w, peak, gpus, rules, 1.0 / (rate * derate * eff))
    if sync is not None:
        exposed, how = sync
        eff *= (1.0 / (rate * derate * eff)) / (1.0 / (rate * derate * eff) + exposed)
        bound = f"{bound}; {how}" if bound else how
    if slower > 1:
        eff /= slower
        bound = f"{bound}; {why}" if bound else why
    band = band_for(w.kind, device_class, w.parameters)
    est = estimate(
        w,
        rate_flops=rate * scale * derate,
        efficiency=eff,
        band=band,
        **whole_run(w, rules),
    )
    if bound:
        est = Estimate(est.seconds, est.low_seconds, est.high_seconds, f"{est.basis}; {bound}")
    return est


def whole_run(w: Workload, rules: Rules) -> dict[str, float]:
    """What a run adds to its steps: the rules' start-up, the workload's (else the rules')
    evaluation share."""
    share = w.eval_fraction if w.eval_fraction is not None else rules.eval_fraction
    return {"startup_seconds": startup_seconds(w, rules), "eval_fraction": share}


def startup_seconds(w: Workload, rules: Rules) -> float:
    """The rules' start-up plus reading the model's 16-bit weights."""
    load = 2.0 * w.parameters / (rules.load_gbs * 1e9) if rules.startup_seconds else 0.0
    return rules.startup_seconds + load


def _as_planned(
    w: Workload, memory_bytes: int | None, gpus: int, rules: Rules
) -> tuple[Workload, float, str]:
    """``w`` at the micro-batch its memory plan runs, how much slower a step is for the plan's
    checkpointing and a 4-bit base, and why."""
    plan = memory_plan(w, memory_bytes, gpus, rules) if memory_bytes else None
    checkpointing = w.gradient_checkpointing
    if plan is not None and plan.fits and plan.batch_size:
        checkpointing = plan.checkpointing
        if plan.batch_size < _micro(w):
            w = replace(w, micro_batch=plan.batch_size)
    elif plan is not None:
        # It does not fit: timed as the last resort would run (batch 1, checkpointing where
        # allowed), so that more memory never makes a time longer.
        checkpointing = plan.checkpointing
        w = replace(w, micro_batch=1)
    slower, why = 1.0, []
    if checkpointing:
        factor = recompute_factor(w)
        slower *= factor
        why.append(f"checkpointing recomputes the forward pass (+{factor - 1:.0%} compute)")
    if w.method == "qlora":
        slower *= QLORA_SLOWDOWN
        why.append(f"the 4-bit base is dequantized at every pass (×{QLORA_SLOWDOWN:g})")
    return w, slower, "; ".join(why)


def _spec(w: Workload, gpus: int, rules: Rules, strategy: str | None = None) -> MemorySpec:
    if strategy is None:
        strategy = "fsdp" if gpus > 1 and rules.shard_states else "ddp"
    return spec_from_workload(
        w, gpus=max(1, gpus), strategy=strategy, usable_fraction=rules.usable_memory_fraction
    )


def memory_plan(
    w: Workload, per_gpu_bytes: int | None, gpus: int, rules: Rules
) -> FitVerdict | None:
    """How ``w`` fits devices of ``per_gpu_bytes`` each (the CPU: its RAM, as one device):
    as given, at a smaller batch with gradient accumulation, with checkpointing, or not at all
    (:mod:`hwadvisor.memory`). None when the memory or the model is unknown."""
    if per_gpu_bytes is None or per_gpu_bytes <= 0 or w.kind == "classical":
        return None
    try:
        if gpus > 1 and rules.shard_states:
            # Plain data parallel where every GPU holds the states; sharded (FSDP) otherwise,
            # and where sharding lets a larger micro-batch fit than plain data parallel does
            # (more memory must never make the plan slower: with a little more, DDP had
            # squeezed in at half FSDP's micro-batch).
            ddp = fit_verdict(_spec(w, gpus, rules, "ddp"), per_gpu_bytes)
            if ddp.kind == "fits":
                return replace(ddp, message=f"{ddp.message} (plain data parallel)")
            fsdp = fit_verdict(_spec(w, gpus, rules, "fsdp"), per_gpu_bytes)
            larger = (
                fsdp.fits
                and fsdp.checkpointing <= ddp.checkpointing
                and (fsdp.batch_size or 0) > (ddp.batch_size or 0)
            )
            if ddp.kind == "smaller_batch" and not larger:
                return replace(ddp, message=f"{ddp.message} (plain data parallel)")
            return replace(fsdp, message=f"{fsdp.message} (states sharded with FSDP)")
        return fit_verdict(_spec(w, gpus, rules), per_gpu_bytes)
    except MemoryModelError:
        return None


def _fits(w: Workload, per_gpu_bytes: int | None, gpus: int, rules: Rules) -> bool | None:
    if w.kind == "classical":
        if per_gpu_bytes is None:
            return None
        return training_memory_bytes(w) <= per_gpu_bytes * rules.usable_memory_fraction
    plan = memory_plan(w, per_gpu_bytes, gpus, rules)
    return None if plan is None else plan.fits


def memory_needed(w: Workload, rules: Rules) -> int:
    """Training memory on one device at the workload's batch, as given (no checkpointing)."""
    if w.kind == "classical":
        return training_memory_bytes(w)
    try:
        return memory_per_gpu(_spec(w, 1, rules)).total
    except MemoryModelError:
        return training_memory_bytes(w)


def _classical(w: Workload, cores: int) -> Estimate:
    return estimate_cpu_work(w, cores=max(1, cores))


def candidate_rate(
    w: Workload, c: Candidate, rules: Rules, origin: str = "candidate", *, planned: bool = True
) -> Rate:
    """The time to train on a ladder rung (catalog peaks × documented efficiencies), run as
    its memory plan says (``planned``; a measured run, as it was configured)."""
    if c.role == "cpu":
        cores = c.cores or 1
        if w.kind == "classical":
            cpu_est = _classical(w, cores)
        else:
            gflops = cpu_peak_gflops(cores, c.clock_mhz, c.flops_per_cycle, c.sockets)
            cpu_est = estimate(
                w,
                rate_flops=(gflops or 1.0) * 1e9,
                efficiency=default_efficiency(w, "cpu"),
                band=band_for(w.kind, "cpu", w.parameters),
                **whole_run(w, rules),
            )
        cpu_memory = int((c.memory_gb or 0) * GIB)
        return Rate(c.title, origin, 0, cpu_est, cpu_memory, cpu_memory, cores=c.cores)
    peak = c.peak or find_gpu_peak(c.gpu or "")
    assert peak is not None  # checked when the rules were loaded
    memory = catalog_memory(peak)
    if w.kind == "classical":
        return Rate(
            c.title,
            origin,
            c.gpus,
            None,
            memory,
            memory,
            notes=["classical ML runs on the CPU"],
            gpu=peak.name,
        )
    est = _gpu_estimate(
        w, peak, c.gpus, c.device_class, rules, memory_bytes=memory if planned else None
    )
    return Rate(c.title, origin, c.gpus, est, memory, memory, gpu=peak.name)


def _no_estimate(title: str, memory: int | None, why: str) -> Rate:
    """This machine's CPU without an estimate, and why."""
    return Rate(title, "this-machine", 0, None, memory, memory, notes=[why])


def _this_cpu(w: Workload, profile: Profile, rules: Rules) -> Rate:
    cpu = profile.cpu
    bench = profile.benchmarks
    known = cpu.usable_cpus.value or cpu.logical_cores.value or (bench.threads if bench else None)
    usable = known or 1
    memory = profile.memory.cgroup_limit_bytes.value or profile.memory.total_bytes.value
    count = f"{known} CPU{'s' if known != 1 else ''}" if known else "CPU count unknown"
    title = f"this machine's CPU ({cpu.model_name.value or 'unknown model'}, {count})"
    if w.kind == "classical":
        if not known:
            why = "the profile does not say how many CPUs: no estimate"
            return _no_estimate(title, memory, why)
        return Rate(title, "this-machine", 0, _classical(w, usable), memory, memory)
    precision = "bf16" if w.precision in ("bf16", "fp16") else "fp32"
    step = _per_core(bench, "train_step", None, usable)
    fp32 = _per_core(bench, "matmul", "fp32", usable)
    matmul = _per_core(bench, "matmul", precision, usable)
    if matmul is None or _emulated(matmul.m):
        # Nobody trains in a precision the CPU only emulates (~100× slower): fp32 it is.
        matmul = fp32
    used = [found.m for found in (step, fp32, matmul) if found is not None]
    set_aside = _distrust_note(
        [
            m
            for m in (
                _measured(bench, "cpu", "train_step"),
                _measured(bench, "cpu", "matmul", "fp32"),
                _measured(bench, "cpu", "matmul", precision),
            )
            if m not in used
        ]
    )
    scaled = next((f for f in (fp32, step, matmul) if f is not None and f.scale != 1.0), None)
    scaled_note = (
        f"measured on {scaled.m.threads} of {usable} CPUs while other processes held the rest; "
        f"scaled to {usable} (scan again on an idle machine to confirm)"
        if scaled is not None
        else None
    )
    if (
        w.kind == "conv"
        and fp32 is not None
        and step is not None
        and step.m.params.get("train_gflops_per_s")
    ):
        # The training-step benchmark (an fp32 conv net) calibrates conv training on this CPU,
        # against the fp32 matmul measured beside it.
        rate = fp32.gflops * 1e9
        step_rate = float(step.m.params["train_gflops_per_s"]) * step.scale * 1e9
        eff = min(1.0, step_rate / rate)
        note = (
            f"measured fp32 matmul {fp32.gflops:,.0f} GFLOP/s; a measured training step of a "
            f"small conv net ran at {eff:.0%} of that speed, so conv training here is counted "
            "at that share"
        )
        return Rate(
            title,
            "this-machine",
            0,
            estimate(
                w,
                rate_flops=rate,
                efficiency=eff,
                band=band_for(w.kind, "cpu", w.parameters),
                **whole_run(w, rules),
            ),
            memory,
            memory,
            calibrated=True,
            notes=[n for n in (note, scaled_note) if n],
        )
    if matmul is not None:
        note = f"measured {matmul.m.precision} matmul {matmul.gflops:,.0f} GFLOP/s"
        est = estimate(
            w,
            rate_flops=matmul.gflops * 1e9,
            efficiency=default_efficiency(w, "cpu"),
            band=band_for(w.kind, "cpu", w.parameters),
            **whole_run(w, rules),
        )
        notes = [n for n in (note, scaled_note) if n]
        return Rate(title, "this-machine", 0, est, memory, memory, calibrated=True, notes=notes)
    details = cpu_training_peak(cpu)
    if details.gflops is None:
        return _no_estimate(title, memory, "CPU peak unknown and no measurement")
    est = estimate(
        w,
        rate_flops=details.gflops * 1e9,
        efficiency=default_efficiency(w, "cpu"),
        band=band_for(w.kind, "cpu", w.parameters),
        **whole_run(w, rules),
    )
    if set_aside:
        notes = [f"CPU peak formula × default efficiency; {set_aside}"]
    elif bench is None:
        notes = ["no benchmarks in the profile: CPU peak formula × default efficiency"]
    else:
        notes = ["no CPU measurement: CPU peak formula × default efficiency"]
    return Rate(title, "this-machine", 0, est, memory, memory, notes=notes)


def _device_class(peak: GpuPeak) -> str:
    return "datacenter-gpu" if is_datacenter(peak) else "consumer-gpu"


def _this_gpus(w: Workload, profile: Profile, rules: Rules) -> Rate | None:
    gpus = [g for g in profile.gpus if not g.lost and g.backend in ("cuda", "rocm", "xpu")]
    if not gpus or w.kind == "classical":
        return None
    shown = [g for g in gpus if g.name.reason != NOT_SHOWN]
    first: GpuInfo = shown[0] if shown else gpus[0]
    name = first.name.value or "unknown GPU"
    peak = find_gpu_peak(name, first.vram_total_bytes.value)
    memory = first.vram_total_bytes.value
    from_catalog = False
    if memory is None and peak is not None and catalog_memory(peak) is not None:
        memory, from_catalog = catalog_memory(peak), True
    # GPUs an import counts but does not show ("Attached GPUs : 8" above one GPU's block) are
    # taken to be the model of the shown ones where those are identical, and the basis says so.
    assumed = assumed_like_shown(gpus)
    count = sum(1 for g in shown if g.name.value == first.name.value) + assumed
    title = f"this machine's GPU{'s' if count > 1 else ''} ({count}× {name})"
    assumed_note = (
        [
            f"{assumed} of the {count} GPUs are not in the imported text: assumed to be {name} "
            "like the ones shown"
        ]
        if assumed
        else []
    )
    if peak is None:
        return Rate(
            title,
            "this-machine",
            count,
            None,
            memory,
            memory,
            notes=[f"{name!r} is not in the GPU catalog: no estimate", *assumed_note],
        )
    notes: list[str] = [*assumed_note]
    derate = 1.0
    calibrated = False
    precision = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32"}.get(w.precision, "fp32")
    device = bench_device(profile, first)
    matmul = _ok(profile.benchmarks, device, "matmul", precision)
    set_aside = _distrust_note([_measured(profile.benchmarks, device, "matmul", precision)])
    if set_aside:
        notes.append(f"catalog peak × default efficiency; {set_aside}")
    elif profile.benchmarks is not None and first.backend == "xpu":
        notes.append(
            "hwadvisor's benchmarks run on CUDA and ROCm GPUs, not yet on Intel GPUs: catalog "
            "peak × default efficiency"
        )
    elif profile.benchmarks is not None and device is None:
        notes.append(
            "the benchmarks cannot be matched to this GPU (no UUID or bus id): catalog peak "
            "× default efficiency"
        )
    if matmul is not None and matmul.efficiency:
        derate = min(1.0, matmul.efficiency / TYPICAL_MATMUL_EFFICIENCY)
        calibrated = True
        notes.append(
            f"measured {precision} matmul at {matmul.efficiency:.0%} of peak"
            + (f": estimate derated to {derate:.0%}" if derate < 1 else "")
        )
    elif profile.benchmarks is None:
        notes.append("no benchmarks in the profile: catalog peak × default efficiency")
    torch = profile.frameworks.torch
    usable = torch.xpu_available if first.backend == "xpu" else torch.cuda_available
    if usable.value is False:
        notes.append("PyTorch cannot use this GPU yet (see the findings)")
    if from_catalog:
        notes.append(
            f"GPU memory from the catalog ({peak.memory_gb:g} GB per {peak.name}): the profile "
            "does not give it"
        )
    est = _gpu_estimate(
        w, peak, count, _device_class(peak), rules, derate=derate, memory_bytes=memory
    )
    return Rate(
        title,
        "this-machine",
        count,
        est,
        memory,
        memory,
        calibrated=calibrated,
        notes=notes,
        memory_from_catalog=from_catalog,
        gpu=peak.name,
    )


#: Share of unified memory macOS lets the GPU use for one process (Metal's
#: recommendedMaxWorkingSetSize is about two thirds to three quarters of RAM).
APPLE_GPU_MEMORY_SHARE = 0.7


def _this_apple_gpu(w: Workload, profile: Profile, rules: Rules) -> Rate | None:
    """An Apple-silicon GPU (PyTorch's MPS backend): the chip is named by the CPU model ("Apple
    M2 Max"), its memory is the machine's unified memory, shared."""
    if w.kind == "classical":
        return None
    chip = profile.cpu.model_name.value or ""
    # Every Apple-silicon Mac has the GPU; PyTorch reaches it unless MPS is known to be missing
    # (macOS before 12.3, an x86 Python under Rosetta). An imported collect_env does not say.
    if not chip.startswith("Apple M") or profile.frameworks.torch.mps_available.value is False:
        return None
    peak = find_gpu_peak(chip)
    title = f"this machine's GPU ({chip}, through MPS)"
    total = profile.memory.total_bytes.value
    memory = int(total * APPLE_GPU_MEMORY_SHARE) if total else None
    if peak is None or peak.vendor != "apple":
        return Rate(
            title,
            "this-machine",
            1,
            None,
            memory,
            memory,
            notes=[f"{chip!r} has no GPU figures in the catalog: no estimate"],
        )
    est = _gpu_estimate(w, peak, 1, "consumer-gpu", rules, memory_bytes=memory)
    note = (
        f"Apple GPU: catalog peak × the consumer-GPU efficiency; it shares "
        f"{APPLE_GPU_MEMORY_SHARE:.0%} of the unified memory"
    )
    return Rate(title, "this-machine", 1, est, memory, memory, notes=[note])


def this_machine_rates(w: Workload, profile: Profile, rules: Rules) -> list[Rate]:
    rates = [_this_cpu(w, profile, rules)]
    gpu = _this_gpus(w, profile, rules) or _this_apple_gpu(w, profile, rules)
    if gpu is not None:
        rates.append(gpu)
    return rates
