"""The GPU's clocks, temperature, power and throttle reasons around a benchmark case (NVML).

Runs inside the benchmark child. Every NVML call goes through the NVML probe's choke point
(:class:`hwadvisor.probes.nvml._Nvml`), so one unreadable field is ``null`` and never an error;
no NVML at all (not installed, no driver, a ROCm machine) means no samples, which is not an error
either. ``pynvml`` is imported on the first :func:`sample`, never at import time, and NVML is
started once per process.

torch numbers GPUs after ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``; NVML numbers them
all in PCI order. A torch device is therefore found in NVML by its PCI bus id, else its UUID,
and by index only where nothing can reorder them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.model.bench import TelemetrySample
from hwadvisor.probes.nvml import _GpuLostError, _Nvml, _Result

#: nvmlClocksEventReason* bits (nvml.h; the same bits as the older ClocksThrottleReason*).
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x0001, "gpu_idle"),
    (0x0002, "applications_clocks_setting"),
    (0x0004, "sw_power_cap"),
    (0x0008, "hw_slowdown"),
    (0x0010, "sync_boost"),
    (0x0020, "sw_thermal_slowdown"),
    (0x0040, "hw_thermal_slowdown"),
    (0x0080, "hw_power_brake_slowdown"),
    (0x0100, "display_clock_setting"),
    # Only in the older ClocksThrottleReasons set, but drivers may still report them.
    (0x0200, "board_limit"),
    (0x0400, "reliability"),
)

_SENTINELS = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF}


def decode_clock_reasons(mask: int) -> list[str]:
    """Names of the bits set in an NVML clocks-event (throttle) reason mask, lowest bit first.

    Bits hwadvisor does not know are kept as one ``unknown_0x...`` entry rather than dropped.
    """
    if mask < 0:
        raise ValueError(f"not a reason mask: {mask}")
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = 0
    for bit, _ in CLOCK_EVENT_REASONS:
        known |= bit
    if mask & ~known:
        names.append(f"unknown_{mask & ~known:#x}")
    return names


@dataclass
class _State:
    """NVML for this process: the session, or why there is none, and the handles found."""

    session: _Nvml | None = None
    reason: str | None = None
    handles: dict[int, Any] = field(default_factory=dict)


_STATE: _State | None = None


def reset() -> None:
    """Forget the NVML session (tests; a process that wants NVML re-read from scratch)."""
    global _STATE
    state, _STATE = _STATE, None
    if state is not None and state.session is not None:
        # A failing shutdown needs no fix: NVML is released with the process anyway.
        with contextlib.suppress(state.session.error, AttributeError):
            state.session.module.nvmlShutdown()


def _state() -> _State:
    global _STATE
    if _STATE is not None:
        return _STATE
    try:
        import pynvml
    except ImportError:
        _STATE = _State(reason="the pynvml module is not installed")
        return _STATE
    try:
        session = _Nvml(pynvml)
    except AttributeError:
        _STATE = _State(reason="the pynvml module is not nvidia-ml-py (it has no NVMLError)")
        return _STATE
    try:
        pynvml.nvmlInit()
    except AttributeError:
        _STATE = _State(reason="the pynvml module is not nvidia-ml-py (it has no nvmlInit)")
        return _STATE
    except session.error as err:
        _STATE = _State(reason=f"NVML did not start: {session.describe(err)}")
        return _STATE
    _STATE = _State(session=session)
    return _STATE


def unavailable_reason() -> str | None:
    """Why there is no telemetry in this process, or None when NVML is up (starts it if need be)."""
    return _state().reason


def _value(result: _Result) -> Any:
    if isinstance(result.value, int) and result.value in _SENTINELS:
        return None
    return result.value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def torch_pci_bus_id(props: Any) -> str | None:
    """``00000000:17:00.0`` from torch's device properties (torch ≥ 2.2 has the PCI ids)."""
    try:
        domain, bus, device = (
            int(props.pci_domain_id),
            int(props.pci_bus_id),
            int(props.pci_device_id),
        )
    except (AttributeError, TypeError, ValueError):
        return None
    if bus == 0 and device == 0 and domain == 0:
        return None  # what builds without the field answer; no real GPU sits at 0000:00:00
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def torch_uuid(props: Any) -> str | None:
    """NVML's spelling of torch's device UUID (torch drops the ``GPU-`` prefix)."""
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def _index_is_safe() -> bool:
    """Whether torch's index may be used as NVML's: not when CUDA_VISIBLE_DEVICES picks GPUs.

    (CUDA's default FASTEST_FIRST order can also differ from NVML's PCI order on machines with
    mixed GPU models; the PCI bus id, which torch ≥ 2.2 reports, is what protects those.)
    """
    return os.environ.get("CUDA_VISIBLE_DEVICES") is None


def _find_handle(session: _Nvml, device_index: int, torch: Any) -> Any:
    """The NVML handle of torch's GPU ``device_index``, or None if it cannot be told safely."""
    props: Any = None
    if torch is not None:
        # get_device_properties needs no CUDA context; a broken CUDA reads as "no properties".
        with contextlib.suppress(RuntimeError, AssertionError, AttributeError):
            props = torch.cuda.get_device_properties(device_index)
    if props is not None:
        bus_id = torch_pci_bus_id(props)
        if bus_id is not None:
            found = session.query("nvmlDeviceGetHandleByPciBusId", bus_id)
            if found.value is not None:
                return found.value
        uuid = torch_uuid(props)
        if uuid is not None:
            found = session.query("nvmlDeviceGetHandleByUUID", uuid)
            if found.value is not None:
                if uuid.startswith("MIG-"):
                    # Clocks and temperature belong to the whole GPU the MIG slice is part of.
                    parent = session.query(
                        "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", found.value
                    )
                    return parent.value
                return found.value
    if not _index_is_safe():
        return None
    found = session.query("nvmlDeviceGetHandleByIndex", device_index)
    return found.value


def sample(
    device_index: int, case: str, when: str, *, torch: Any | None = None
) -> TelemetrySample | None:
    """The GPU's state now, for torch's ``cuda:<device_index>``; None without NVML.

    ``torch`` maps the index to NVML (by PCI bus id or UUID); by default the ``torch`` module
    already imported in this process is used, and none is imported here.
    """
    state = _state()
    session = state.session
    if session is None:
        return None
    if torch is None:
        torch = sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "version", None), "hip", None):
        return None  # ROCm GPUs are not NVML's
    try:
        handle = state.handles.get(device_index)
        if handle is None:
            handle = _find_handle(session, device_index, torch)
            if handle is None:
                return None
            state.handles[device_index] = handle
        return _read(session, handle, device_index, case, when)
    except _GpuLostError:
        state.handles.pop(device_index, None)
        return None


def _read(session: _Nvml, h: Any, device_index: int, case: str, when: str) -> TelemetrySample:
    sm = session.const("NVML_CLOCK_SM", 1)
    mem = session.const("NVML_CLOCK_MEM", 2)
    sensor = session.const("NVML_TEMPERATURE_GPU", 0)
    temperature = session.query_first(
        ("nvmlDeviceGetTemperatureV", h, sensor), ("nvmlDeviceGetTemperature", h, sensor)
    )
    power_mw = _int(_value(session.query("nvmlDeviceGetPowerUsage", h)))
    # ClocksEventReasons is the current name; ClocksThrottleReasons goes away with CUDA 14.
    reasons = _int(
        _value(
            session.query_first(
                ("nvmlDeviceGetCurrentClocksEventReasons", h),
                ("nvmlDeviceGetCurrentClocksThrottleReasons", h),
            )
        )
    )
    return TelemetrySample(
        device=f"cuda:{device_index}",
        case=case,
        when=when,
        sm_clock_mhz=_int(_value(session.query("nvmlDeviceGetClockInfo", h, sm))),
        memory_clock_mhz=_int(_value(session.query("nvmlDeviceGetClockInfo", h, mem))),
        temperature_c=_int(_value(temperature)),
        power_watts=power_mw / 1000.0 if power_mw is not None else None,
        throttle_reasons=decode_clock_reasons(reasons) if reasons is not None else [],
    )
