"""``sycl-ls`` (oneAPI): one line per SYCL device and backend::

    [level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Arc(TM) A770 Graphics 1.3 [1.3.x]
    [opencl:gpu][opencl:1] Intel(R) OpenCL Graphics, Intel(R) Arc(TM) A770 Graphics OpenCL 3.0 [...]
    [cuda:gpu][cuda:0] NVIDIA CUDA BACKEND, NVIDIA GeForce RTX 3090 8.6 [CUDA 12.2]

(``[ext_oneapi_level_zero:gpu:0]`` before oneAPI 2024.) One GPU appears once per backend: per
name, the most any one backend lists is kept. sycl-ls states no memory. Releases before 2022
printed platforms only (``[opencl:0] GPU : Intel(R) OpenCL HD Graphics 3.0 [...]``): no device
name to read.
"""

from __future__ import annotations

import re

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    empty_profile,
    new_gpu,
)
from hwadvisor.importers.devicenames import (
    BACKENDS,
    is_compute_gpu,
    left_out_note,
    name_device,
    vendor_of,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import GpuInfo

SRC = Source.SYCL_LS
MISSING = "not in sycl-ls output"

_BACKENDS = r"(?:ext_oneapi_)?(?:level_zero|opencl|cuda|hip|native_cpu|host)(?:_v2)?"
#: ``[opencl:gpu][opencl:1] Platform, Device Version [driver]`` (2024 and later).
_NEW = re.compile(
    rf"^\[(?P<backend>{_BACKENDS}):(?P<type>\w+)\]\[(?:{_BACKENDS}):\d+\]\s+"
    r"(?P<platform>[^,\[]+),\s+(?P<rest>.*?)\s*(?:\[(?P<driver>[^\[\]]*)\])?\s*$"
)
#: ``[ext_oneapi_level_zero:gpu:0] Platform, Device Version [driver]`` (2022 to 2023).
_MID = re.compile(
    rf"^\[(?P<backend>{_BACKENDS}):(?P<type>\w+):\d+\]\s+"
    r"(?P<platform>[^,\[]+),\s+(?P<rest>.*?)\s*(?:\[(?P<driver>[^\[\]]*)\])?\s*$"
)
#: ``[opencl:0] GPU : Intel(R) OpenCL HD Graphics 3.0 [21.37.20939]`` (before 2022).
_OLD = re.compile(rf"^\[(?P<backend>{_BACKENDS}):\d+\]\s+(?P<type>[A-Z]+)\s*:\s*(?P<rest>.*)$")
_SNIFF = re.compile(rf"(?m)^\[{_BACKENDS}:(?:\w+\]\[{_BACKENDS}:\d+\]|\w+:\d+\]|\d+\]\s+[A-Z]+ ?:)")
#: The version after the device name: "OpenCL 3.0 NEO", "1.3", "8.6".
_VERSION = re.compile(r"\s+(?:OpenCL \d+\.\d+.*|\d+\.\d+(?:\.\d+)*)$")


class SyclLsError(ImportFormatError):
    """The text lists no SYCL GPU device."""


def looks_like_sycl_ls(sample: Sample) -> bool:
    """A line starting ``[backend:type]`` as sycl-ls prints its devices."""
    return _SNIFF.search(sample.head) is not None


def parse_sycl_ls(sample: Sample) -> Imported:
    """Read sycl-ls's GPU devices.

    Raises :class:`SyclLsError` when it lists no GPU or only platforms (before oneAPI 2022).
    """
    found: list[tuple[str, str, str, str | None]] = []  # (backend, type, device, driver)
    old: list[tuple[str, str]] = []
    for line in sample.text.splitlines():
        line = line.strip()
        match = _NEW.match(line) or _MID.match(line)
        if match:
            device = _VERSION.sub("", match.group("rest")).strip()
            found.append(
                (match.group("backend"), match.group("type").lower(), device, match.group("driver"))
            )
            continue
        legacy = _OLD.match(line)
        if legacy:
            old.append((legacy.group("type").upper(), legacy.group("rest").strip()))
    if not found:
        if any(kind == "GPU" for kind, _ in old):
            raise SyclLsError(
                "this sycl-ls (before oneAPI 2022) prints platforms, not devices: paste the "
                "output of a newer `sycl-ls`, or `xpu-smi discovery`, or `clinfo -l`"
            )
        shown = "; ".join(f"{kind} {rest}" for kind, rest in old) or "nothing"
        raise SyclLsError(
            f"sycl-ls lists no GPU ({shown[:200]}): install the GPU's Level Zero or OpenCL "
            "runtime, or paste `lspci -nn | grep -Ei 'vga|3d|display'` to list the GPUs"
        )
    gpus_by_name: dict[str, dict[str, int]] = {}
    drivers: dict[str, str] = {}
    for backend, kind, device, driver in found:
        if kind != "gpu" or not device:
            continue
        counts = gpus_by_name.setdefault(device, {})
        counts[backend] = counts.get(backend, 0) + 1
        if driver:
            drivers.setdefault(device, f"{driver} ({backend})")
    if not gpus_by_name:
        shown = "; ".join(dict.fromkeys(f"{kind} {device}" for _, kind, device, _ in found))
        raise SyclLsError(
            f"sycl-ls lists no GPU, only {shown[:200]}: install the GPU's Level Zero or OpenCL "
            "runtime, or paste `lspci -nn | grep -Ei 'vga|3d|display'` to list the GPUs"
        )
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    for device, counts in gpus_by_name.items():
        if len(counts) > 1:
            notes.append(f"{device!r} is listed by {len(counts)} SYCL backends; counted once")
        vendor = vendor_of(device)
        for _ in range(max(counts.values())):
            named = name_device(
                len(gpus),
                vendor or "",
                device,
                pci_id=None,
                memory_bytes=None,
                source=SRC,
                tool="sycl-ls",
            )
            if not is_compute_gpu(vendor, device, named.known):
                left_out.append(device)
                continue
            if device in drivers:
                notes.append(f"GPU {len(gpus)}: runtime {drivers[device]}")
            gpus.append(
                new_gpu(
                    len(gpus),
                    vendor=vendor or "unknown",
                    backend=BACKENDS.get(vendor or "", "unknown"),
                    source=SRC,
                    missing=MISSING,
                    name=named.name,
                )
            )
    if not gpus:
        raise SyclLsError(
            f"no compute GPU among the GPUs sycl-ls lists ({'; '.join(left_out)}): "
            "paste `lspci -nn | grep -Ei 'vga|3d|display'` to list the GPUs on the PCI bus"
        )
    gpus, too_many = cap_gpus(gpus)
    left = left_out_note(left_out, "sycl-ls")
    if left:
        notes.append(left)
    notes.append("sycl-ls states no GPU memory")
    return Imported(empty_profile(gpus=gpus), truncated=too_many, notes=notes)


FORMAT = Format(
    name="sycl-ls output",
    source=SRC,
    sniff=looks_like_sycl_ls,
    parse=parse_sycl_ls,
    rank=40,
    example="sycl-ls",
)
