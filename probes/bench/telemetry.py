"""The GPU's clocks, temperature, power, throttle reasons, utilization and other compute
processes around a benchmark case (NVML), and the identity of a benchmark GPU.

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

from hwadvisor.model.bench import BenchDevice, TelemetrySample
from hwadvisor.probes.nvml import _GpuLostError, _Nvml, _Result, normalize_bus_id

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
    """torch index -> the NVML handle of the whole GPU (clocks, temperature, power)."""
    process_handles: dict[int, Any] = field(default_factory=dict)
    """torch index -> the handle whose processes are this device's: the MIG device's own handle
    on a MIG slice (the whole GPU's list holds every slice's, and needs privileges)."""


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


def _torch_props(device_index: int, torch: Any) -> Any:
    """torch's device properties of ``cuda:<device_index>``, or None where they cannot be read."""
    if torch is None:
        return None
    # get_device_properties needs no CUDA context; a broken CUDA reads as "no properties".
    with contextlib.suppress(RuntimeError, AssertionError, AttributeError, IndexError):
        return torch.cuda.get_device_properties(device_index)
    return None


def _find_handles(session: _Nvml, device_index: int, torch: Any) -> tuple[Any, Any]:
    """The NVML handles of torch's GPU ``device_index``: (the whole GPU's, the one whose
    processes are this device's), or (None, None) if the GPU cannot be told safely."""
    props = _torch_props(device_index, torch)
    if props is not None:
        uuid = torch_uuid(props)
        if uuid is not None and uuid.startswith("MIG-"):
            # A MIG slice: clocks and temperature belong to the whole GPU it is part of (the
            # bus id finds that one too), its processes are asked of the slice itself.
            found = session.query("nvmlDeviceGetHandleByUUID", uuid)
            if found.value is not None:
                parent = session.query("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", found.value)
                if parent.value is not None:
                    return parent.value, found.value
        bus_id = torch_pci_bus_id(props)
        if bus_id is not None:
            found = session.query("nvmlDeviceGetHandleByPciBusId", bus_id)
            if found.value is not None:
                return found.value, found.value
        if uuid is not None and not uuid.startswith("MIG-"):
            found = session.query("nvmlDeviceGetHandleByUUID", uuid)
            if found.value is not None:
                return found.value, found.value
    if not _index_is_safe():
        return None, None
    found = session.query("nvmlDeviceGetHandleByIndex", device_index)
    return found.value, found.value


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
        found = _handles(state, session, device_index, torch)
        if found is None:
            return None
        handle, processes = found
        return _read(session, handle, device_index, case, when, processes=processes)
    except _GpuLostError:
        state.handles.pop(device_index, None)
        state.process_handles.pop(device_index, None)
        return None


def _handles(
    state: _State, session: _Nvml, device_index: int, torch: Any
) -> tuple[Any, Any] | None:
    """The handles of torch's GPU ``device_index`` (found once, then remembered), or None."""
    handle = state.handles.get(device_index)
    if handle is None:
        handle, processes = _find_handles(session, device_index, torch)
        if handle is None:
            return None
        state.handles[device_index] = handle
        state.process_handles[device_index] = processes
    return handle, state.process_handles.get(device_index, handle)


def other_process_count(pids: list[int], own_pid: int) -> int:
    """Compute processes on the GPU that are not this one.

    In a container NVML reports the host's pids, which never equal ours: then one of them is
    taken to be this process (it holds a CUDA context on the GPU when the samples are taken).
    """
    if own_pid in pids:
        return sum(1 for pid in pids if pid != own_pid)
    return max(0, len(pids) - 1)


def _pids(value: Any) -> list[int] | None:
    """The pids of NVML's process list, or None when the answer is not a list of processes."""
    if not isinstance(value, (list, tuple)):
        return None
    pids: list[int] = []
    for entry in value:
        pid = _int(getattr(entry, "pid", None))
        if pid is None:
            return None
        pids.append(pid)
    return pids


def _other_processes(session: _Nvml, h: Any) -> int | None:
    # The plain name is _v3 in current bindings; drivers before 510 have only _v2.
    found = session.query_first(
        ("nvmlDeviceGetComputeRunningProcesses", h),
        ("nvmlDeviceGetComputeRunningProcesses_v3", h),
        ("nvmlDeviceGetComputeRunningProcesses_v2", h),
    )
    pids = _pids(found.value)
    return None if pids is None else other_process_count(pids, os.getpid())


def _utilization(session: _Nvml, h: Any) -> int | None:
    rates = session.query("nvmlDeviceGetUtilizationRates", h).value
    gpu = _int(getattr(rates, "gpu", None))
    return gpu if gpu is not None and 0 <= gpu <= 100 else None  # not a sentinel


def _read(
    session: _Nvml,
    h: Any,
    device_index: int,
    case: str,
    when: str,
    *,
    processes: Any = None,
) -> TelemetrySample:
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
        utilization_percent=_utilization(session, h),
        other_processes=_other_processes(session, h if processes is None else processes),
    )


def _text(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


def device_identity(device_index: int, torch: Any | None = None) -> BenchDevice | None:
    """Name, UUID and PCI bus id of torch's ``cuda:<device_index>``; None where nothing is known.

    torch's device properties come first (they need no NVML, and they are what torch runs on:
    a MIG slice's UUID is the slice's); what they lack is asked of NVML, where it is up.
    """
    if torch is None:
        torch = sys.modules.get("torch")
    props = _torch_props(device_index, torch)
    hip = bool(getattr(getattr(torch, "version", None), "hip", None))
    name = _text(getattr(props, "name", None)) if props is not None else None
    uuid: str | None = None
    bus_id: str | None = None
    if props is not None:
        bus_id = torch_pci_bus_id(props)
        # ROCm's UUIDs are not NVML's: kept as torch prints them.
        uuid = _text(getattr(props, "uuid", None)) if hip else torch_uuid(props)
    if not hip and None in (name, uuid, bus_id):
        name, uuid, bus_id = _nvml_identity(device_index, torch, name, uuid, bus_id)
    if name is None and uuid is None and bus_id is None:
        return None
    return BenchDevice(device=f"cuda:{device_index}", name=name, uuid=uuid, pci_bus_id=bus_id)


def _nvml_identity(
    device_index: int, torch: Any, name: str | None, uuid: str | None, bus_id: str | None
) -> tuple[str | None, str | None, str | None]:
    """``name``, ``uuid`` and ``bus_id`` with the missing ones read from NVML, if it is up."""
    state = _state()
    session = state.session
    if session is None:
        return name, uuid, bus_id
    try:
        found = _handles(state, session, device_index, torch)
        if found is None:
            return name, uuid, bus_id
        whole, own = found  # on a MIG slice: the GPU, and the slice (its name and MIG- UUID)
        if name is None:
            name = _text(_value(session.query("nvmlDeviceGetName", own)))
        if uuid is None:
            uuid = _text(_value(session.query("nvmlDeviceGetUUID", own)))
        if bus_id is None:
            pci = session.query("nvmlDeviceGetPciInfo", whole).value
            bus_id = normalize_bus_id(getattr(pci, "busId", None))
    except _GpuLostError:
        state.handles.pop(device_index, None)
        state.process_handles.pop(device_index, None)
    return name, uuid, bus_id
