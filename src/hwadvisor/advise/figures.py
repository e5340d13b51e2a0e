"""The few figures behind a verdict, built once for every output: the CPU's and the best GPU's
matrix multiply (a figure measured on the free cores says so, and what it was counted as), the
GPU's speed-up on a training step, and the training memory that decides."""

from __future__ import annotations

from hwadvisor.advise.trust import _per_core
from hwadvisor.model.advice import HardwareEstimate, KeyFigure
from hwadvisor.model.bench import Benchmarks, BenchStatus, Measurement
from hwadvisor.model.profile import Profile
from hwadvisor.units import format_rate, human_bytes


def best_measurement(
    bench: Benchmarks | None, case: str, cpu: bool, precisions: tuple[str, ...]
) -> Measurement | None:
    """The best OK run of ``case`` on the CPU (or on any GPU), in the first precision found."""
    if bench is None:
        return None
    for precision in precisions:
        rows = [
            m
            for m in bench.measurements
            if m.case == case
            and m.precision == precision
            and m.status == BenchStatus.OK
            and m.best is not None
            and (m.device == "cpu") == cpu
        ]
        if rows:
            return max(rows, key=lambda m: m.best or 0.0)
    return None


def _threads(n: int | None) -> str:
    return f"{n} thread{'s' if n != 1 else ''}" if n else ""


def cpu_figure(profile: Profile) -> KeyFigure | None:
    """The CPU's fp32 matmul as the estimate used it: as measured, scaled from the free cores
    ("88.9 GFLOP/s on 1 of 2 threads, counted as 178 for the estimate"), or set aside."""
    b = profile.benchmarks
    m = best_measurement(b, "matmul", True, ("fp32",))
    if m is None or m.best is None:
        return None
    usable = (
        profile.cpu.usable_cpus.value
        or profile.cpu.logical_cores.value
        or (b.threads if b else None)
    )
    threads = m.threads or (b.threads if b else None)
    found = _per_core(b, "matmul", "fp32", usable or 1)
    label = "CPU matrix multiply (fp32)"
    if found is not None and found.scale != 1.0:
        counted = format_rate(found.gflops, m.unit)
        return KeyFigure(
            label=label,
            value=found.gflops,
            unit=m.unit,
            text=counted,
            detail=(
                f"measured {format_rate(m.best, m.unit)} on {threads} of {usable} threads while "
                f"other processes held the rest, counted as {counted} for the estimate"
            ),
        )
    if found is None:
        why = ", ".join(sorted({d.value.replace("_", " ") for d in m.disturbances})) or (
            "its repeated runs disagreed"
        )
        return KeyFigure(
            label=label,
            value=m.best,
            unit=m.unit,
            text=format_rate(m.best, m.unit),
            detail=f"{_threads(threads)}; machine busy ({why}): not used for the estimate",
        )
    return KeyFigure(
        label=label,
        value=m.best,
        unit=m.unit,
        text=format_rate(m.best, m.unit),
        detail=_threads(threads),
    )


def machine_figures(profile: Profile) -> list[KeyFigure]:
    """The figures of a machine without a workload: CPU and GPU matmul, the training speed-up."""
    out: list[KeyFigure] = []
    b = profile.benchmarks
    cpu = cpu_figure(profile)
    gpu = best_measurement(b, "matmul", False, ("bf16", "fp16", "tf32", "fp32"))
    speedup = b.training_speedup[0] if b is not None and b.training_speedup else None
    if cpu is not None and not (gpu is not None and speedup is not None):
        # With a GPU and the training step's speed-up, the CPU is already beside the GPU.
        out.append(cpu)
    if gpu is not None and gpu.best is not None:
        detail = gpu.device + (
            f", {gpu.efficiency:.0%} of peak" if gpu.efficiency is not None else ""
        )
        if gpu.disturbances:
            detail += "; GPU busy: not used for the estimate"
        out.append(
            KeyFigure(
                label=f"GPU matrix multiply ({gpu.precision})",
                value=gpu.best,
                unit=gpu.unit,
                text=format_rate(gpu.best, gpu.unit),
                detail=detail,
            )
        )
    if speedup is not None:
        out.append(
            KeyFigure(
                label="training step, GPU vs CPU",
                value=speedup.speedup,
                unit="×",
                text=f"{speedup.speedup:.1f}×",
                detail=(
                    f"{speedup.gpu_samples_per_s:,.0f} vs {speedup.cpu_samples_per_s:,.1f} "
                    "samples/s"
                ),
            )
        )
    return out


def memory_figure(here: HardwareEstimate | None) -> KeyFigure | None:
    """The training memory that decides, said once, with the plan's own figures: "13.7 GiB of
    22.4 GiB of RAM usable" (fits), "20.1 GiB of 22.4 GiB usable per GPU at batch 128 ×2",
    "needs 15.2 GiB per GPU even at batch 1 with checkpointing; 9.5 GiB usable"."""
    if here is None or here.memory_needed_bytes is None:
        return None
    where = " per GPU" if here.gpus else " of RAM"
    if here.plan_kind is not None and here.plan_bytes is not None and here.usable_bytes:
        need, room = human_bytes(here.plan_bytes), human_bytes(here.usable_bytes)
        how = ""
        if here.plan_kind in ("smaller_batch", "checkpointing"):
            parts = [f"at batch {here.plan_batch}"]
            if here.plan_accumulation > 1:
                parts[0] += f" ×{here.plan_accumulation}"
            if here.plan_checkpointing:
                parts.append("with checkpointing")
            how = " (" + ", ".join(parts) + ")"
        if here.plan_kind == "does_not_fit":
            ckpt = " with checkpointing" if here.plan_checkpointing else ""
            return KeyFigure(
                label="training memory",
                value=float(here.plan_bytes),
                unit="B",
                text=f"needs {need}{where} even at batch 1{ckpt}; {room} usable",
                detail="does not fit",
            )
        return KeyFigure(
            label="training memory",
            value=float(here.plan_bytes),
            unit="B",
            text=f"{need} of {room}{where} usable{how}",
            detail="fits",
        )
    available = (
        human_bytes(here.memory_available_bytes)
        if here.memory_available_bytes is not None
        else "unknown"
    )
    fits = {True: "fits", False: "does not fit", None: "fit unknown"}[here.fits_memory]
    return KeyFigure(
        label="training memory",
        value=float(here.memory_needed_bytes),
        unit="B",
        text=f"{human_bytes(here.memory_needed_bytes)} needed, {available}{where}",
        detail=fits,
    )


def key_figures(profile: Profile, here: HardwareEstimate | None) -> list[KeyFigure]:
    """The verdict's figures: the machine's, then the memory of ``here`` (this machine's option
    that decided)."""
    out = machine_figures(profile)
    memory = memory_figure(here)
    if memory is not None:
        out.append(memory)
    elif here is None and profile.memory.total_bytes.value is not None:
        total = profile.memory.total_bytes.value
        out.append(
            KeyFigure(
                label="system memory",
                value=float(total),
                unit="B",
                text=human_bytes(total),
                detail="total",
            )
        )
    return out
