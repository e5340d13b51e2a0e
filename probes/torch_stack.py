"""The framework stack as PyTorch sees it: build, CUDA/ROCm/MPS/XPU availability, devices.

Run through :func:`torch_child` in a spawned child process: reading device properties initialises
CUDA, which must never happen in the scanning process. Every torch call is guarded on its own, so
one failing call (a lost GPU, a missing NCCL, an old torch without ``backends.mps``) leaves the
others intact.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any, TypeVar

from pydantic import Field

from hwadvisor.model.facts import Fact, Source, StrictModel, fact, unknown
from hwadvisor.model.profile import GpuInfo, TorchDevice, TorchInfo
from hwadvisor.probes._common import Failed, describe

T = TypeVar("T")

#: What a torch call is known to raise when a backend is missing or broken. torch's own
#: ``CudaError``/``AcceleratorError``/``OutOfMemoryError`` derive from RuntimeError.
_CALL_ERRORS: tuple[type[BaseException], ...] = (
    RuntimeError,
    AttributeError,
    AssertionError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    OSError,
    ImportError,
)

#: ``import torch`` on a machine with broken CUDA/ROCm libraries raises these (undefined symbol,
#: missing ``libcudnn.so``, a half-installed dependency).
_IMPORT_ERRORS: tuple[type[BaseException], ...] = (
    ImportError,
    OSError,
    RuntimeError,
    AttributeError,
)


class TorchReport(StrictModel):
    """What the torch probe returns: torch's view, and the non-NVIDIA GPUs only torch reports."""

    torch: TorchInfo = Field(default_factory=TorchInfo)
    accelerators: list[GpuInfo] = Field(default_factory=list)
    """ROCm (amd), MPS (apple) and XPU (intel) devices. NVIDIA devices come from NVML instead."""


def _try(fn: Callable[[], T]) -> T | Failed:
    try:
        return fn()
    except _CALL_ERRORS as exc:
        return Failed(describe(exc))


def _torch_fact(fn: Callable[[], T | None], none_reason: str) -> Fact[T]:
    """A fact from one guarded torch call: its value, ``None`` → ``none_reason``, error → why."""
    got = _try(fn)
    if isinstance(got, Failed):
        return unknown(got.reason, Source.TORCH)
    return fact(got, Source.TORCH, none_reason)


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _fact_fields(model: type[StrictModel]) -> list[str]:
    sample = model.model_construct()
    return [name for name in model.model_fields if isinstance(getattr(sample, name, None), Fact)]


def _all_unknown(reason: str, **values: Any) -> TorchInfo:
    facts = {name: unknown(reason, Source.TORCH) for name in _fact_fields(TorchInfo)}
    return TorchInfo(**{**facts, **values})


def _distribution_version() -> Fact[str]:
    # The package metadata still says which torch is installed when importing it fails.
    try:
        return fact(metadata.version("torch"), Source.ENV)
    except metadata.PackageNotFoundError:
        return unknown("no installed torch distribution found", Source.ENV)


def _import_torch() -> Any | TorchInfo:
    """The torch module, or a TorchInfo saying why there is none."""
    try:
        import torch
    except ModuleNotFoundError as exc:
        if exc.name == "torch":
            return _all_unknown("torch is not installed", installed=False)
        # A dependency of torch is missing: torch is there, but broken.
        return _broken(exc)
    except _IMPORT_ERRORS as exc:
        return _broken(exc)
    return torch


def _broken(exc: BaseException) -> TorchInfo:
    error = describe(exc)
    return _all_unknown(
        f"import torch failed: {error}",
        installed=True,
        import_error=error,
        version=_distribution_version(),
    )


def collect_torch(torch_module: Any | None = None) -> TorchReport:
    """Read torch's build, backends and devices. ``None`` imports the real torch (here, lazily)."""
    with warnings.catch_warnings():
        # A user's `-W error` would turn torch's harmless import warnings (NumPy missing ...)
        # into exceptions; here they are shown, not raised.
        warnings.simplefilter("default")
        if torch_module is None:
            loaded = _import_torch()
            if isinstance(loaded, TorchInfo):
                return TorchReport(torch=loaded)
            torch_module = loaded
        return _collect(torch_module)


def torch_child() -> dict[str, Any]:
    """Entry point for the isolated child process."""
    return collect_torch().model_dump(mode="json")


# --------------------------------------------------------------------------------------------
# Versions


def _build(torch: Any) -> Fact[str]:
    hip = _try(lambda: _opt_str(torch.version.hip))
    cuda = _try(lambda: _opt_str(torch.version.cuda))
    # torch.version.xpu appeared in torch 2.4; older versions simply have no XPU build.
    xpu = _try(lambda: _opt_str(getattr(torch.version, "xpu", None)))
    if isinstance(hip, str):
        return fact("rocm", Source.TORCH)
    if isinstance(cuda, str):
        return fact("cuda", Source.TORCH)
    if isinstance(xpu, str):
        return fact("xpu", Source.TORCH)
    for got in (hip, cuda, xpu):
        if isinstance(got, Failed):
            return unknown(f"torch.version unreadable: {got.reason}", Source.TORCH)
    return fact("cpu", Source.TORCH)


def _dotted(major: int, minor: int, patch: int) -> str:
    return f"{major}.{minor}.{patch}"


def cudnn_version_string(raw: int) -> str:
    """cuDNN's version integer as text: 90100 → "9.1.0" (cuDNN 9+), 8907 → "8.9.7" (cuDNN ≤ 8)."""
    if raw >= 90000:
        return _dotted(raw // 10000, raw % 10000 // 100, raw % 100)
    return _dotted(raw // 1000, raw % 1000 // 100, raw % 100)


def nccl_version_string(raw: Any) -> str:
    """NCCL's version as text from ``torch.cuda.nccl.version()``: a tuple (torch ≥ 1.13) such as
    ``(2, 21, 5)`` or ``(2, 21, 5, "+cuda12.4")``, or an int on old torch (2708, 21903)."""
    if isinstance(raw, tuple | list):
        numbers = ".".join(str(int(part)) for part in raw[:3])
        suffix = "".join(str(part) for part in raw[3:])
        return numbers + suffix
    value = int(raw)
    if value >= 10000:  # NCCL >= 2.9 encodes major*10000 + minor*100 + patch
        return _dotted(value // 10000, value % 10000 // 100, value % 100)
    return _dotted(value // 1000, value % 1000 // 100, value % 100)


def _cudnn(torch: Any, build: str | None) -> Fact[str]:
    got = _try(lambda: torch.backends.cudnn.version())
    if isinstance(got, Failed):
        return unknown(f"cuDNN version unreadable: {got.reason}", Source.TORCH)
    if got is None:
        return unknown("cuDNN is not available in this build of PyTorch", Source.TORCH)
    if build == "rocm":
        # On ROCm this is MIOpen's version, encoded differently: keep the number, not a guess.
        return unknown(f"ROCm build: MIOpen stands in for cuDNN (version int {got})", Source.TORCH)
    return _torch_fact(lambda: cudnn_version_string(int(got)), "cuDNN version not reported")


def _nccl(torch: Any, build: str | None) -> Fact[str]:
    if build not in (None, "cuda", "rocm"):
        kind = {"cpu": "CPU-only", "xpu": "XPU"}.get(build, build)
        return unknown(f"NCCL is not part of a {kind} build of PyTorch", Source.TORCH)
    # Absent on CPU and Windows builds: torch.cuda.nccl or torch._C._nccl_version is missing.
    got = _try(lambda: nccl_version_string(torch.cuda.nccl.version()))
    if isinstance(got, Failed):
        return unknown(f"NCCL not available: {got.reason}", Source.TORCH)
    return fact(got, Source.TORCH)


# --------------------------------------------------------------------------------------------
# Devices


def _messages(caught: list[warnings.WarningMessage]) -> list[str]:
    texts = (str(item.message).strip() for item in caught)
    return list(dict.fromkeys(text for text in texts if text))  # each once, in order


def pci_bus_id(domain: int, bus: int, device: int) -> str:
    """A PCI address in NVML's form, ``00000000:17:00.0`` (function 0: a GPU's display function)."""
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def _props_fact(props: Any, read: Callable[[Any], T | None], missing: str) -> Fact[T]:
    return _torch_fact(lambda: read(props), missing)


def _uuid(props: Any) -> str | None:
    raw = getattr(props, "uuid", None)  # torch >= 2.1
    return _opt_str(raw) if raw is not None else None


def _pci(props: Any) -> str | None:
    domain = getattr(props, "pci_domain_id", None)
    bus = getattr(props, "pci_bus_id", None)
    device = getattr(props, "pci_device_id", None)
    if domain is None or bus is None or device is None:
        return None  # older torch does not expose the PCI address
    return pci_bus_id(int(domain), int(bus), int(device))


def _device(torch: Any, index: int, rocm: bool) -> tuple[TorchDevice, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        props = _try(lambda: torch.cuda.get_device_properties(index))
    init_warnings = _messages(caught)
    if isinstance(props, Failed):
        reason = f"get_device_properties({index}) failed: {props.reason}"
        facts = {name: unknown(reason, Source.TORCH) for name in _fact_fields(TorchDevice)}
        return TorchDevice(index=index, **facts), init_warnings
    device = TorchDevice(
        index=index,
        name=_props_fact(props, lambda p: str(p.name), "no device name"),
        total_memory_bytes=_props_fact(props, lambda p: int(p.total_memory), "not reported"),
        multiprocessor_count=_props_fact(
            props, lambda p: int(p.multi_processor_count), "not reported"
        ),
        compute_capability=_props_fact(
            props, lambda p: f"{int(p.major)}.{int(p.minor)}", "not reported"
        ),
        uuid=_props_fact(props, _uuid, "this torch does not report device UUIDs"),
        pci_bus_id=_props_fact(props, _pci, "this torch does not report PCI addresses"),
        architecture=(
            _props_fact(props, lambda p: _opt_str(p.gcnArchName), "no gfx target reported")
            if rocm
            else unknown("CUDA device: see compute_capability", Source.TORCH)
        ),
    )
    return device, init_warnings


def _amd_gpu(device: TorchDevice) -> GpuInfo:
    arch = device.architecture
    if arch.value is not None:
        # "gfx90a:sramecc+:xnack-" → "gfx90a": the target, without its feature flags.
        arch = fact(arch.value.split(":", 1)[0], Source.TORCH)
    return GpuInfo(
        index=device.index,
        vendor="amd",
        backend="rocm",
        name=device.name,
        uuid=device.uuid,
        pci_bus_id=device.pci_bus_id,
        architecture=arch,
        compute_capability=unknown(
            "CUDA compute capability does not apply to AMD GPUs", Source.TORCH
        ),
        vram_total_bytes=device.total_memory_bytes,
        multiprocessor_count=device.multiprocessor_count,
    )


def _mps_gpu() -> GpuInfo:
    return GpuInfo(
        index=0,
        vendor="apple",
        backend="mps",
        name=fact("Apple GPU (MPS)", Source.TORCH),
        vram_total_bytes=unknown("unified memory: the GPU shares system memory", Source.TORCH),
    )


def _xpu_properties(torch: Any, index: int) -> Callable[[], Any]:
    return lambda: torch.xpu.get_device_properties(index)


def _xpu_gpus(torch: Any) -> list[GpuInfo]:
    count = _try(lambda: int(torch.xpu.device_count()))
    if isinstance(count, Failed):
        return []
    gpus = []
    for index in range(count):
        props = _try(_xpu_properties(torch, index))
        if isinstance(props, Failed):
            reason = f"xpu.get_device_properties({index}) failed: {props.reason}"
            gpus.append(
                GpuInfo(
                    index=index, vendor="intel", backend="xpu", name=unknown(reason, Source.TORCH)
                )
            )
            continue
        gpus.append(
            GpuInfo(
                index=index,
                vendor="intel",
                backend="xpu",
                name=_props_fact(props, lambda p: str(p.name), "no device name"),
                vram_total_bytes=_props_fact(props, lambda p: int(p.total_memory), "not reported"),
            )
        )
    return gpus


# --------------------------------------------------------------------------------------------
# The whole picture


def _collect(torch: Any) -> TorchReport:
    build = _build(torch)
    hip = _torch_fact(lambda: _opt_str(torch.version.hip), "not a ROCm build of PyTorch")
    cuda = _torch_fact(lambda: _opt_str(torch.version.cuda), "not a CUDA build of PyTorch")
    if build.value == "rocm":
        # ROCm builds may also fill torch.version.cuda; the runtime in use is HIP.
        cuda = unknown("ROCm build: the runtime is HIP (see hip_version)", Source.TORCH)

    with warnings.catch_warnings(record=True) as caught:
        # "always": the user's filters (PYTHONWARNINGS=ignore, -W error) must not hide the
        # warning or turn it into an exception.
        warnings.simplefilter("always")
        available = _torch_fact(lambda: bool(torch.cuda.is_available()), "not reported")
    cuda_warnings = _messages(caught)
    count = _torch_fact(lambda: int(torch.cuda.device_count()), "not reported")

    devices: list[TorchDevice] = []
    init_warnings: list[str] = []
    if available.value and count.value:
        for index in range(count.value):
            device, device_warnings = _device(torch, index, rocm=build.value == "rocm")
            devices.append(device)
            init_warnings.extend(w for w in device_warnings if w not in init_warnings)

    mps_available = _torch_fact(lambda: bool(torch.backends.mps.is_available()), "not reported")
    xpu_available = _torch_fact(
        lambda: hasattr(torch, "xpu") and bool(torch.xpu.is_available()), "not reported"
    )

    info = TorchInfo(
        installed=True,
        version=_torch_fact(lambda: _opt_str(torch.__version__), "torch.__version__ is empty"),
        build=build,
        cuda_runtime_version=cuda,
        hip_version=hip,
        cudnn_version=_cudnn(torch, build.value),
        nccl_version=_nccl(torch, build.value),
        cuda_available=available,
        cuda_warnings=cuda_warnings,
        cuda_init_warnings=init_warnings,
        device_count=count,
        devices=devices,
        arch_list=_torch_fact(
            lambda: [str(arch) for arch in torch.cuda.get_arch_list()], "not reported"
        ),
        mps_built=_torch_fact(lambda: bool(torch.backends.mps.is_built()), "not reported"),
        mps_available=mps_available,
        xpu_available=xpu_available,
        cpu_capability=_torch_fact(
            lambda: _opt_str(torch.backends.cpu.get_cpu_capability()), "not reported"
        ),
        num_threads=_torch_fact(lambda: int(torch.get_num_threads()), "not reported"),
    )

    accelerators: list[GpuInfo] = []
    if build.value == "rocm":
        accelerators.extend(_amd_gpu(device) for device in devices)
    if mps_available.value:
        accelerators.append(_mps_gpu())
    if xpu_available.value:
        accelerators.extend(_xpu_gpus(torch))
    return TorchReport(torch=info, accelerators=accelerators)
