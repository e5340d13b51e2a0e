"""Flags on GPU figures that are not the GPU's capability: another process had work on it, its
clocks were slowed for heat or power, or only a share of it (a MIG slice, MPS) was ours.

The figures stay in the profile, flagged with :class:`~hwadvisor.model.bench.Disturbance` and a
note with the figures behind the flag; the advice uses only trusted ones. Everything comes from
what the benchmark child recorded (NVML telemetry around each case, the GPU's identity) and the
profile, so this module imports neither torch nor pynvml.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from hwadvisor.model.bench import (
    Benchmarks,
    BenchStatus,
    Disturbance,
    Measurement,
    TelemetrySample,
)
from hwadvisor.model.profile import Profile

#: GPU utilization before our first kernel on the device at or above which others were using it
#: (NVML's utilization is the share of its last sample period with a kernel running).
BUSY_UTILIZATION_PERCENT = 10

#: Clock-event (throttle) reasons that mean the clocks were slowed for heat or power trouble.
#: ``sw_power_cap`` is not one: a datacenter GPU under full load runs at its power cap by design.
THROTTLE_REASONS: tuple[str, ...] = (
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
)

#: Environment variables that put CUDA programs under MPS (the pipe directory of the daemon, and
#: the share of the SMs a client may use).
MPS_ENV_VARS: tuple[str, ...] = ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")

#: The MPS control daemon's default pipe directory.
MPS_PIPE_DIR = Path("/tmp/nvidia-mps")


def case_id(m: Measurement) -> str:
    """The id of the case ``m`` came from, as the plan makes it: ``cuda:0.matmul.bf16``,
    ``cuda:0.h2d.pinned``, ``cuda:0.launch_latency`` (missing parts dropped)."""
    return ".".join(part for part in (_device(m.device), m.case, m.precision, m.variant) if part)


def mps_reason(env: Mapping[str, str] | None = None, pipe_dir: Path = MPS_PIPE_DIR) -> str | None:
    """Why the GPUs look shared through MPS (in words), or None."""
    env = os.environ if env is None else env
    for name in MPS_ENV_VARS:
        if env.get(name, "").strip():
            return f"{name} is set"
    try:
        # The daemon's control pipe, not the bare directory: a directory can outlive the daemon.
        if (pipe_dir / "control").exists():
            return f"the MPS control daemon's pipe {pipe_dir / 'control'} exists"
    except OSError:
        return None
    return None


def flag_gpu_measurements(
    bench: Benchmarks,
    profile: Profile,
    env: Mapping[str, str] | None = None,
    *,
    mps_pipe_dir: Path = MPS_PIPE_DIR,
) -> None:
    """Flag every measured GPU figure of ``bench`` that other work, throttled clocks or a shared
    GPU make something other than the GPU's capability (in place; calling it again adds nothing).

    * :attr:`Disturbance.GPU_BUSY`: NVML listed other compute processes on the GPU around the
      case, or the GPU was at least :data:`BUSY_UTILIZATION_PERCENT` % busy before our first case
      on it started (then the utilization is someone else's);
    * :attr:`Disturbance.GPU_THROTTLED`: a sample of the case has one of
      :data:`THROTTLE_REASONS`;
    * :attr:`Disturbance.GPU_SHARED`: the GPU is a MIG slice (the profile says MIG is on for it,
      or its UUID is a ``MIG-`` one), or MPS is in use (``env``, by default ``os.environ``, has
      :data:`MPS_ENV_VARS`, or the daemon's ``control`` pipe is in ``mps_pipe_dir``).
    """
    # benchrun will call this module: imported here, so that neither import needs the other first.
    from hwadvisor.benchrun import device_identity

    samples: dict[tuple[str, str], list[TelemetrySample]] = {}
    first_before: dict[str, TelemetrySample] = {}
    for s in bench.telemetry:
        device = _device(s.device)
        samples.setdefault((device, s.case), []).append(s)
        if s.when == "before":
            first_before.setdefault(device, s)  # the list is in the order the cases ran
    mig_slices = {
        _device(d.device) for d in bench.devices if (d.uuid or "").upper().startswith("MIG-")
    }
    mps = mps_reason(env, mps_pipe_dir)
    shared: dict[str, str | None] = {}

    for m in bench.measurements:
        if not m.device.startswith("cuda") or m.status != BenchStatus.OK:
            continue
        device = _device(m.device)
        mine = samples.get((device, case_id(m)), [])
        busy = _busy(mine, first_before.get(device))
        if busy:
            _flag(m, Disturbance.GPU_BUSY, busy)
        throttled = _throttled(mine)
        if throttled:
            _flag(m, Disturbance.GPU_THROTTLED, throttled)
        if device not in shared:
            _name, _memory, gpu = device_identity(profile, device, bench)
            mig = (gpu is not None and gpu.mig_enabled.value is True) or device in mig_slices
            shared[device] = (
                "a MIG slice, not the whole GPU"
                if mig
                else f"the GPU is shared through MPS ({mps})"
                if mps
                else None
            )
        note = shared[device]
        if note:
            _flag(m, Disturbance.GPU_SHARED, note)


def _device(device: str) -> str:
    return "cuda:0" if device == "cuda" else device


def _busy(samples: list[TelemetrySample], first_before: TelemetrySample | None) -> str | None:
    parts = []
    others = max((s.other_processes or 0 for s in samples), default=0)
    if others > 0:
        parts.append(f"{others} other process{'es' if others > 1 else ''} on the GPU")
    used = first_before.utilization_percent if first_before is not None else None
    if used is not None and used >= BUSY_UTILIZATION_PERCENT:
        parts.append(f"GPU utilization {used}% before the benchmarks")
    return "; ".join(parts) or None


def _throttled(samples: list[TelemetrySample]) -> str | None:
    reasons = _unique(r for s in samples for r in s.throttle_reasons if r in THROTTLE_REASONS)
    if not reasons:
        return None
    note = f"clocks slowed: {', '.join(reasons)}"
    hottest = max((s.temperature_c for s in samples if s.temperature_c is not None), default=None)
    if hottest is not None:
        note += f" (up to {hottest} °C)"
    return note


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _flag(m: Measurement, disturbance: Disturbance, note: str) -> None:
    """Add ``disturbance`` and its note to ``m``, unless it is already there."""
    if disturbance in m.disturbances:
        return
    m.disturbances.append(disturbance)
    m.disturbance_note = f"{m.disturbance_note}; {note}" if m.disturbance_note else note
