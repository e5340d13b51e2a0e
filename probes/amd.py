"""AMD GPUs through the ``amdsmi`` Python bindings (ROCm's AMD SMI), when they are installed.

Run through :func:`amdsmi_child` in a child process with a time limit, like NVML. One choke point
(:func:`_query`) guards every call, so a field the GPU does not support (the bindings raise, or
answer ``"N/A"``) becomes ``null`` with a reason and never hides the other fields or GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

from pydantic import Field

from hwadvisor.model.facts import Fact, Source, StrictModel, fact, unknown
from hwadvisor.model.profile import GpuInfo
from hwadvisor.probes._common import Failed, describe

T = TypeVar("T")

MIB = 1024 * 1024


class AmdStatus(str, Enum):
    OK = "ok"
    NOT_INSTALLED = "not_installed"
    """The ``amdsmi`` module is not importable (ROCm's AMD SMI bindings are not installed)."""
    ERROR = "error"


class AmdReport(StrictModel):
    """What the amdsmi probe returns."""

    status: AmdStatus = AmdStatus.ERROR
    message: str | None = None
    """What went wrong, with the fix, when status is not ok."""
    gpus: list[GpuInfo] = Field(default_factory=list)


class _Smi:
    """The one place amdsmi is called: every call guarded, every error named."""

    def __init__(self, module: Any) -> None:
        self.module = module
        library_error = getattr(module, "AmdSmiException", None)
        extra: tuple[type[BaseException], ...] = ()
        if isinstance(library_error, type) and issubclass(library_error, BaseException):
            extra = (library_error,)
        # KeyError/TypeError/ValueError: the dict shapes and units changed across ROCm releases.
        self.errors: tuple[type[BaseException], ...] = (
            *extra,
            AttributeError,
            KeyError,
            TypeError,
            ValueError,
            OSError,
        )

    def call(self, name: str, *args: Any) -> Any | Failed:
        try:
            return getattr(self.module, name)(*args)
        except self.errors as exc:
            return Failed(f"{name}: {describe(exc)}")

    def enum(self, enum_name: str, member: str) -> Any | Failed:
        try:
            return getattr(getattr(self.module, enum_name), member)
        except AttributeError as exc:
            return Failed(describe(exc))


def _usable(value: Any) -> bool:
    # amdsmi answers "N/A" (or an empty string) for what a GPU does not report.
    return value is not None and not (isinstance(value, str) and value.strip() in ("", "N/A"))


def _from(got: Any | Failed, convert: Callable[[Any], T], what: str) -> Fact[T]:
    if isinstance(got, Failed):
        return unknown(got.reason, Source.AMDSMI)
    if not _usable(got):
        return unknown(f"{what}: not available on this GPU", Source.AMDSMI)
    try:
        return fact(convert(got), Source.AMDSMI, f"{what}: not reported")
    except (TypeError, ValueError, KeyError) as exc:
        return unknown(f"{what}: unexpected value {got!r} ({describe(exc)})", Source.AMDSMI)


def _key(got: Any | Failed, key: str) -> Any | Failed:
    if isinstance(got, Failed):
        return got
    if not isinstance(got, dict):
        return Failed(f"unexpected answer {type(got).__name__}, not a dict")
    return got.get(key)


def _vram(smi: _Smi, handle: Any) -> tuple[Fact[int], Fact[int]]:
    """Total and used VRAM in bytes. ``amdsmi_get_gpu_memory_*`` answer in bytes; the older
    ``amdsmi_get_gpu_vram_usage`` answers in MiB, so it is only the fallback."""
    vram_type = smi.enum("AmdSmiMemoryType", "VRAM")
    total: Fact[int] = unknown("not reported", Source.AMDSMI)
    used: Fact[int] = unknown("not reported", Source.AMDSMI)
    if not isinstance(vram_type, Failed):
        total = _from(smi.call("amdsmi_get_gpu_memory_total", handle, vram_type), int, "VRAM")
        used = _from(smi.call("amdsmi_get_gpu_memory_usage", handle, vram_type), int, "VRAM")
    if total.known and used.known:
        return total, used
    usage = smi.call("amdsmi_get_gpu_vram_usage", handle)
    if not total.known:
        fallback = _from(_key(usage, "vram_total"), lambda v: int(v) * MIB, "VRAM total")
        total = fallback if fallback.known else total
    if not used.known:
        fallback = _from(_key(usage, "vram_used"), lambda v: int(v) * MIB, "VRAM used")
        used = fallback if fallback.known else used
    return total, used


def _celsius(raw: Any) -> int:
    value = int(raw)
    # ROCm 5.x bindings answered in millidegrees; today's answer in degrees.
    return round(value / 1000) if value > 1000 else value


def _temperature(smi: _Smi, handle: Any) -> Fact[int]:
    metric = smi.enum("AmdSmiTemperatureMetric", "CURRENT")
    if isinstance(metric, Failed):
        return unknown(metric.reason, Source.AMDSMI)
    last: Fact[int] = unknown("no temperature sensor answered", Source.AMDSMI)
    # Instinct GPUs have no EDGE sensor; their hottest point (HOTSPOT/junction) is what matters.
    for sensor_name in ("EDGE", "HOTSPOT"):
        sensor = smi.enum("AmdSmiTemperatureType", sensor_name)
        if isinstance(sensor, Failed):
            continue
        last = _from(
            smi.call("amdsmi_get_temp_metric", handle, sensor, metric), _celsius, "temperature"
        )
        if last.known:
            return last
    return last


def _gpu(smi: _Smi, index: int, handle: Any) -> GpuInfo:
    asic = smi.call("amdsmi_get_gpu_asic_info", handle)
    total, used = _vram(smi, handle)
    free: Fact[int] = unknown("needs total and used VRAM", Source.DERIVED)
    if total.value is not None and used.value is not None:
        free = fact(max(total.value - used.value, 0), Source.DERIVED)
    return GpuInfo(
        index=index,
        vendor="amd",
        backend="rocm",
        name=_from(_key(asic, "market_name"), str, "market name"),
        uuid=_from(smi.call("amdsmi_get_gpu_device_uuid", handle), str, "UUID"),
        pci_bus_id=_from(smi.call("amdsmi_get_gpu_device_bdf", handle), str, "PCI address"),
        architecture=_from(_key(asic, "target_graphics_version"), str, "gfx target"),
        compute_capability=unknown(
            "CUDA compute capability does not apply to AMD GPUs", Source.AMDSMI
        ),
        multiprocessor_count=_from(_key(asic, "num_compute_units"), int, "compute units"),
        vram_total_bytes=total,
        vram_used_bytes=used,
        vram_free_bytes=free,
        # The C API documents power caps in microwatts.
        power_limit_watts=_from(
            _key(smi.call("amdsmi_get_power_cap_info", handle), "power_cap"),
            lambda v: float(v) / 1_000_000,
            "power cap",
        ),
        temperature_c=_temperature(smi, handle),
    )


def collect_amdsmi(amdsmi_module: Any | None = None) -> AmdReport:
    """AMD GPUs as amdsmi reports them. ``None`` imports the real bindings (here, lazily)."""
    if amdsmi_module is None:
        try:
            import amdsmi
        except ModuleNotFoundError as exc:
            if exc.name == "amdsmi":
                return AmdReport(
                    status=AmdStatus.NOT_INSTALLED,
                    message="amdsmi is not installed: install ROCm's AMD SMI Python bindings "
                    "(they ship with ROCm) for AMD GPU details; torch still reports ROCm GPUs",
                )
            return _import_failed(exc)
        except (ImportError, OSError) as exc:  # bindings present, libamd_smi.so missing/broken
            return _import_failed(exc)
        amdsmi_module = amdsmi
    smi = _Smi(amdsmi_module)

    started = smi.call("amdsmi_init")
    if isinstance(started, Failed):
        return AmdReport(
            status=AmdStatus.ERROR,
            message=f"amdsmi could not start ({started.reason}): check that the amdgpu driver "
            "is loaded and that this user may open /dev/kfd and /dev/dri (video/render groups)",
        )
    try:
        handles = smi.call("amdsmi_get_processor_handles")
        if isinstance(handles, Failed):
            return AmdReport(
                status=AmdStatus.ERROR, message=f"amdsmi could not list GPUs ({handles.reason})"
            )
        if not isinstance(handles, list | tuple):
            return AmdReport(
                status=AmdStatus.ERROR,
                message=f"amdsmi listed GPUs as {type(handles).__name__}, not a list",
            )
        gpus = [_gpu(smi, index, handle) for index, handle in enumerate(handles)]
    finally:
        smi.call("amdsmi_shut_down")
    return AmdReport(status=AmdStatus.OK, gpus=gpus)


def _import_failed(exc: BaseException) -> AmdReport:
    return AmdReport(
        status=AmdStatus.ERROR,
        message=f"amdsmi is installed but cannot be loaded ({describe(exc)}): "
        "make its version match the installed ROCm",
    )


def amdsmi_child() -> dict[str, Any]:
    """Entry point for the isolated child process."""
    return collect_amdsmi().model_dump(mode="json")
