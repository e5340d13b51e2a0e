"""The framework stack as PyTorch sees it, read with the standard library and torch only.

This module is the torch probe's collector. It imports nothing from hwadvisor, pydantic or any
other third-party package, and keeps to Python 3.8 syntax, so that it runs in two ways:

- imported by :mod:`hwadvisor.probes.torch_stack` in hwadvisor's own (spawned) child process;
- as a script, its source handed with ``-c`` to *another* interpreter (``scan --torch-python``:
  a conda environment's python, or a wrapper that runs python inside a container). It then
  prints one line, :data:`MARKER` followed by the JSON report, on the standard output it was
  given; whatever torch or its libraries print goes to stderr.

The JSON has the shape of ``TorchReport`` (facts as ``{"value", "source", "reason"}``); the
parent validates it. Every torch call is guarded on its own, so one failing call (a lost GPU, a
missing NCCL, an old torch without ``backends.mps``) leaves the others intact.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, Dict  # noqa: UP035 - Dict: this file runs on Python 3.8 too

#: The line prefix of the result when run as a script (anything else on stdout is ignored).
MARKER = "HWADVISOR-TORCH-REPORT "

#: The torch-probe format the script writes; the parent refuses another.
FORMAT = 1

#: Longest error text kept in a fact's reason.
MAX_REASON = 300

#: The fact fields of TorchInfo and TorchDevice (a test keeps these equal to the model's).
TORCH_FACTS = (
    "version",
    "build",
    "cuda_runtime_version",
    "hip_version",
    "cudnn_version",
    "nccl_version",
    "cuda_available",
    "device_count",
    "arch_list",
    "mps_built",
    "mps_available",
    "xpu_available",
    "cpu_capability",
    "num_threads",
)
DEVICE_FACTS = (
    "name",
    "total_memory_bytes",
    "multiprocessor_count",
    "compute_capability",
    "uuid",
    "pci_bus_id",
    "architecture",
)

#: What a torch call is known to raise when a backend is missing or broken. torch's own
#: ``CudaError``/``AcceleratorError``/``OutOfMemoryError`` derive from RuntimeError.
_CALL_ERRORS = (
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
_IMPORT_ERRORS = (ImportError, OSError, RuntimeError, AttributeError)

Json = Dict[str, Any]  # noqa: UP006 - evaluated at run time, on Python 3.8 too


class Failed:
    """A guarded call that failed, and why (kept apart from any value the call could return)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line, cut to :data:`MAX_REASON` characters."""
    text = " ".join(str(exc).split()) or "no message"
    text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def fact(value: Any, reason: str, source: str = "torch") -> Json:
    """A fact as JSON: the value, or ``null`` with ``reason`` (non-finite numbers included)."""
    if isinstance(value, float) and not math.isfinite(value):
        value = None
    if value is None:
        return {"value": None, "source": source, "reason": reason}
    return {"value": value, "source": source}


def unknown(reason: str, source: str = "torch") -> Json:
    return {"value": None, "source": source, "reason": reason}


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except _CALL_ERRORS as exc:
        return Failed(describe(exc))


def _torch_fact(fn: Callable[[], Any], none_reason: str) -> Json:
    """A fact from one guarded torch call: its value, ``None`` → ``none_reason``, error → why."""
    got = _try(fn)
    if isinstance(got, Failed):
        return unknown(got.reason)
    return fact(got, none_reason)


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _all_unknown(reason: str, **values: Any) -> Json:
    info: Json = {name: unknown(reason) for name in TORCH_FACTS}
    info.update(values)
    return info


def _distribution_version() -> Json:
    # The package metadata still says which torch is installed when importing it fails.
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        return unknown("no importlib.metadata in this Python", "env")
    try:
        return fact(metadata.version("torch"), "not reported", "env")
    except metadata.PackageNotFoundError:
        return unknown("no installed torch distribution found", "env")


def _import_torch() -> Any:
    """The torch module, or the TorchInfo JSON (a dict) saying why there is none."""
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


def _broken(exc: BaseException) -> Json:
    error = describe(exc)
    return _all_unknown(
        f"import torch failed: {error}",
        installed=True,
        import_error=error,
        version=_distribution_version(),
    )


def collect(torch_module: Any = None) -> Json:
    """torch's build, backends and devices as ``TorchReport`` JSON. ``None`` imports the real
    torch (here, lazily)."""
    with warnings.catch_warnings():
        # A user's `-W error` would turn torch's harmless import warnings (NumPy missing ...)
        # into exceptions; here they are shown, not raised.
        warnings.simplefilter("default")
        if torch_module is None:
            loaded = _import_torch()
            if isinstance(loaded, dict):
                return {"torch": loaded, "accelerators": []}
            torch_module = loaded
        return _collect(torch_module)


# --------------------------------------------------------------------------------------------
# Versions


def _build(torch: Any) -> Json:
    hip = _try(lambda: _opt_str(torch.version.hip))
    cuda = _try(lambda: _opt_str(torch.version.cuda))
    # torch.version.xpu appeared in torch 2.4; older versions simply have no XPU build.
    xpu = _try(lambda: _opt_str(getattr(torch.version, "xpu", None)))
    if isinstance(hip, str):
        return fact("rocm", "")
    if isinstance(cuda, str):
        return fact("cuda", "")
    if isinstance(xpu, str):
        return fact("xpu", "")
    for got in (hip, cuda, xpu):
        if isinstance(got, Failed):
            return unknown(f"torch.version unreadable: {got.reason}")
    return fact("cpu", "")


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
    if isinstance(raw, (tuple, list)):
        numbers = ".".join(str(int(part)) for part in raw[:3])
        suffix = "".join(str(part) for part in raw[3:])
        return numbers + suffix
    value = int(raw)
    if value >= 10000:  # NCCL >= 2.9 encodes major*10000 + minor*100 + patch
        return _dotted(value // 10000, value % 10000 // 100, value % 100)
    return _dotted(value // 1000, value % 1000 // 100, value % 100)


def _cudnn(torch: Any, build: str | None) -> Json:
    got = _try(lambda: torch.backends.cudnn.version())
    if isinstance(got, Failed):
        return unknown(f"cuDNN version unreadable: {got.reason}")
    if got is None:
        return unknown("cuDNN is not available in this build of PyTorch")
    if build == "rocm":
        # On ROCm this is MIOpen's version, encoded differently: keep the number, not a guess.
        return unknown(f"ROCm build: MIOpen stands in for cuDNN (version int {got})")
    return _torch_fact(lambda: cudnn_version_string(int(got)), "cuDNN version not reported")


def _nccl(torch: Any, build: str | None) -> Json:
    if build not in (None, "cuda", "rocm"):
        kind = {"cpu": "CPU-only", "xpu": "XPU"}.get(str(build), build)
        return unknown(f"NCCL is not part of a {kind} build of PyTorch")
    # Absent on CPU and Windows builds: torch.cuda.nccl or torch._C._nccl_version is missing.
    got = _try(lambda: nccl_version_string(torch.cuda.nccl.version()))
    if isinstance(got, Failed):
        return unknown(f"NCCL not available: {got.reason}")
    return fact(got, "")


# --------------------------------------------------------------------------------------------
# Devices


def _messages(caught: list[warnings.WarningMessage] | None) -> list[str]:
    texts = (str(item.message).strip() for item in caught or [])
    return list(dict.fromkeys(text for text in texts if text))  # each once, in order


def pci_bus_id(domain: int, bus: int, device: int) -> str:
    """A PCI address in NVML's form, ``00000000:17:00.0`` (function 0: a GPU's display function)."""
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def _props_fact(props: Any, read: Callable[[Any], Any], missing: str) -> Json:
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


def _device(torch: Any, index: int, rocm: bool) -> tuple[Json, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        props = _try(lambda: torch.cuda.get_device_properties(index))
    init_warnings = _messages(caught)
    if isinstance(props, Failed):
        reason = f"get_device_properties({index}) failed: {props.reason}"
        failed: Json = {"index": index}
        failed.update({name: unknown(reason) for name in DEVICE_FACTS})
        return failed, init_warnings
    device: Json = {
        "index": index,
        "name": _props_fact(props, lambda p: str(p.name), "no device name"),
        "total_memory_bytes": _props_fact(props, lambda p: int(p.total_memory), "not reported"),
        "multiprocessor_count": _props_fact(
            props, lambda p: int(p.multi_processor_count), "not reported"
        ),
        "compute_capability": _props_fact(
            props, lambda p: f"{int(p.major)}.{int(p.minor)}", "not reported"
        ),
        "uuid": _props_fact(props, _uuid, "this torch does not report device UUIDs"),
        "pci_bus_id": _props_fact(props, _pci, "this torch does not report PCI addresses"),
        "architecture": (
            _props_fact(props, lambda p: _opt_str(p.gcnArchName), "no gfx target reported")
            if rocm
            else unknown("CUDA device: see compute_capability")
        ),
    }
    return device, init_warnings


def _amd_gpu(device: Json) -> Json:
    arch = device["architecture"]
    if arch["value"] is not None:
        # "gfx90a:sramecc+:xnack-" → "gfx90a": the target, without its feature flags.
        arch = fact(str(arch["value"]).split(":", 1)[0], "")
    return {
        "index": device["index"],
        "vendor": "amd",
        "backend": "rocm",
        "name": device["name"],
        "uuid": device["uuid"],
        "pci_bus_id": device["pci_bus_id"],
        "architecture": arch,
        "compute_capability": unknown("CUDA compute capability does not apply to AMD GPUs"),
        "vram_total_bytes": device["total_memory_bytes"],
        "multiprocessor_count": device["multiprocessor_count"],
    }


def _mps_gpu() -> Json:
    return {
        "index": 0,
        "vendor": "apple",
        "backend": "mps",
        "name": fact("Apple GPU (MPS)", ""),
        "vram_total_bytes": unknown("unified memory: the GPU shares system memory"),
    }


def _xpu_properties(torch: Any, index: int) -> Callable[[], Any]:
    return lambda: torch.xpu.get_device_properties(index)


def _xpu_gpus(torch: Any) -> list[Json]:
    count = _try(lambda: int(torch.xpu.device_count()))
    if isinstance(count, Failed):
        return []
    gpus: list[Json] = []
    for index in range(count):
        props = _try(_xpu_properties(torch, index))
        gpu: Json = {"index": index, "vendor": "intel", "backend": "xpu"}
        if isinstance(props, Failed):
            gpu["name"] = unknown(f"xpu.get_device_properties({index}) failed: {props.reason}")
        else:
            gpu["name"] = _props_fact(props, lambda p: str(p.name), "no device name")
            gpu["vram_total_bytes"] = _props_fact(
                props, lambda p: int(p.total_memory), "not reported"
            )
        gpus.append(gpu)
    return gpus


# --------------------------------------------------------------------------------------------
# The whole picture


def _collect(torch: Any) -> Json:
    build = _build(torch)
    hip = _torch_fact(lambda: _opt_str(torch.version.hip), "not a ROCm build of PyTorch")
    cuda = _torch_fact(lambda: _opt_str(torch.version.cuda), "not a CUDA build of PyTorch")
    if build["value"] == "rocm":
        # ROCm builds may also fill torch.version.cuda; the runtime in use is HIP.
        cuda = unknown("ROCm build: the runtime is HIP (see hip_version)")

    with warnings.catch_warnings(record=True) as caught:
        # "always": the user's filters (PYTHONWARNINGS=ignore, -W error) must not hide the
        # warning or turn it into an exception.
        warnings.simplefilter("always")
        available = _torch_fact(lambda: bool(torch.cuda.is_available()), "not reported")
    cuda_warnings = _messages(caught)
    count = _torch_fact(lambda: int(torch.cuda.device_count()), "not reported")

    devices: list[Json] = []
    init_warnings: list[str] = []
    if available["value"] and count["value"]:
        for index in range(count["value"]):
            device, device_warnings = _device(torch, index, rocm=build["value"] == "rocm")
            devices.append(device)
            init_warnings.extend(w for w in device_warnings if w not in init_warnings)

    mps_available = _torch_fact(lambda: bool(torch.backends.mps.is_available()), "not reported")
    xpu_available = _torch_fact(
        lambda: hasattr(torch, "xpu") and bool(torch.xpu.is_available()), "not reported"
    )

    info: Json = {
        "installed": True,
        "version": _torch_fact(lambda: _opt_str(torch.__version__), "torch.__version__ is empty"),
        "build": build,
        "cuda_runtime_version": cuda,
        "hip_version": hip,
        "cudnn_version": _cudnn(torch, build["value"]),
        "nccl_version": _nccl(torch, build["value"]),
        "cuda_available": available,
        "cuda_warnings": cuda_warnings,
        "cuda_init_warnings": init_warnings,
        "device_count": count,
        "devices": devices,
        "arch_list": _torch_fact(
            lambda: [str(arch) for arch in torch.cuda.get_arch_list()], "not reported"
        ),
        "mps_built": _torch_fact(lambda: bool(torch.backends.mps.is_built()), "not reported"),
        "mps_available": mps_available,
        "xpu_available": xpu_available,
        "cpu_capability": _torch_fact(
            lambda: _opt_str(torch.backends.cpu.get_cpu_capability()), "not reported"
        ),
        "num_threads": _torch_fact(lambda: int(torch.get_num_threads()), "not reported"),
    }

    accelerators: list[Json] = []
    if build["value"] == "rocm":
        accelerators.extend(_amd_gpu(device) for device in devices)
    if mps_available["value"]:
        accelerators.append(_mps_gpu())
    if xpu_available["value"]:
        accelerators.extend(_xpu_gpus(torch))
    return {"torch": info, "accelerators": accelerators}


# --------------------------------------------------------------------------------------------
# Run as a script by another interpreter


def main() -> None:
    """Collect, then print :data:`MARKER` + JSON on the standard output this process was given.

    Everything torch and its libraries print (C code included) goes to stderr instead, so that
    nothing can corrupt the result line. An unexpected error is reported in the same line.
    """
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    python = sys.version.split()[0]
    try:
        result: Json = {"format": FORMAT, "ok": True, "python": python, "report": collect()}
        line = json.dumps(result, allow_nan=False, default=str)
    except BaseException as exc:  # noqa: BLE001 - the script reports every failure to the parent
        failed = {"format": FORMAT, "ok": False, "python": python, "error": describe(exc)}
        line = json.dumps(failed)
    out.write(MARKER + line + "\n")
    out.flush()
    # Skip interpreter teardown: CUDA atexit handlers have been seen to hang.
    os._exit(0)


if __name__ == "__main__":
    main()
