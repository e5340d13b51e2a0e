"""``clinfo`` and ``clinfo -l``: the OpenCL platforms and their devices.

Full ``clinfo`` lists the platforms, then per platform ``Number of devices  N`` and per device
``Device Name``, ``Device Vendor ID``, ``Driver Version``, ``Device Type`` and ``Global memory
size  25438715904 (23.69GiB)`` as ``Key   value`` lines. ``clinfo -l`` is a tree of names only::

    Platform #0: NVIDIA CUDA
     `-- Device #0: NVIDIA GeForce RTX 3090

GPU devices are read; CPU and accelerator devices are not GPUs. One GPU listed by two platforms
(NVIDIA's and Mesa's rusticl) is one GPU: per name, the most any one platform lists is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    empty_profile,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.devicenames import (
    BACKENDS,
    PCI_VENDORS,
    is_compute_gpu,
    left_out_note,
    name_device,
    vendor_of,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact, unknown
from hwadvisor.model.profile import GpuInfo

SRC = Source.CLINFO
MISSING = "not in clinfo output"

_FULL_SNIFF = re.compile(r"(?m)^\s*Number of platforms\s+\d+")
_LIST_SNIFF = re.compile(r"(?m)^Platform #\d+: .*\n\s*[`|]-- Device #\d+: ")
_KV = re.compile(r"^\s{0,4}(\S.*?)(?:\s{2,}(\S.*?))?\s*$")
_LIST_PLATFORM = re.compile(r"^Platform #(\d+): (.*)$")
_LIST_DEVICE = re.compile(r"^\s*[`|]-- Device #\d+: (.*)$")
_BYTES = re.compile(r"^(\d+)")
#: Names of CPU OpenCL devices in ``clinfo -l``, which prints no device type.
_CPU_NAME = re.compile(r"\bCPU\b|\bProcessor\b|Core\(TM\)|\bXeon\b|\bEPYC\b|\bRyzen\b|^cpu-", re.I)
_GPU_NAME = re.compile(
    r"geforce|quadro|tesla|rtx|nvidia|radeon|instinct|\bgfx\d|\barc\b|graphics|gpu|apple m\d", re.I
)


class ClinfoError(ImportFormatError):
    """The text lists no OpenCL GPU device."""


def looks_like_clinfo(sample: Sample) -> bool:
    """``Number of platforms  N`` (clinfo) or the ``Platform #0: ...`` tree (clinfo -l)."""
    return bool(_FULL_SNIFF.search(sample.head) or _LIST_SNIFF.search(sample.head))


@dataclass
class _Device:
    platform: str
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.keys.get("Device Name", "").strip()

    @property
    def kind(self) -> str | None:
        raw = self.keys.get("Device Type")
        return raw.split()[0].upper() if raw else None


def _read_full(lines: list[str]) -> tuple[list[_Device], int]:
    """The devices of full clinfo output, and the line where the last one's section was open."""
    devices: list[_Device] = []
    platform = ""
    in_devices = False
    last_device_line = -1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        match = _KV.match(line)
        if match is None:
            continue
        key, value = match.group(1), (match.group(2) or "").strip()
        if key == "Platform Name" and value:
            platform, in_devices = value, False
        elif key == "Number of devices":
            in_devices = True
        elif key.startswith(("NULL platform behavior", "ICD loader properties")):
            in_devices = False
        elif in_devices and key == "Device Name":
            devices.append(_Device(platform, {"Device Name": value}))
            last_device_line = number
        elif in_devices and devices:
            devices[-1].keys.setdefault(key, value)
            last_device_line = number
    return devices, last_device_line


def _read_list(lines: list[str]) -> list[_Device]:
    devices = []
    platform = ""
    for line in lines:
        head = _LIST_PLATFORM.match(line)
        if head:
            platform = head.group(2).strip()
            continue
        device = _LIST_DEVICE.match(line)
        if device:
            name = device.group(1).strip()
            kind = "CPU" if _CPU_NAME.search(name) else "GPU" if _GPU_NAME.search(name) else None
            devices.append(_Device(platform, {"Device Name": name, "Device Type": kind or ""}))
    return devices


def _memory(device: _Device) -> int | None:
    raw = device.keys.get("Global memory size")
    match = _BYTES.match(raw or "")
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def _vendor(device: _Device) -> str | None:
    vid = device.keys.get("Device Vendor ID", "").lower().replace("0x", "").strip()
    if vid:
        vendor = PCI_VENDORS.get(vid.zfill(4))
        if vendor:
            return vendor
    return vendor_of(f"{device.name} {device.keys.get('Device Vendor', '')} {device.platform}")


def parse_clinfo(sample: Sample) -> Imported:
    """Read clinfo's GPU devices.

    Raises :class:`ClinfoError` when it lists no GPU (only CPU or accelerator devices).
    """
    lines = sample.text.splitlines()
    full = bool(_FULL_SNIFF.search(sample.text))
    devices, last_line = _read_full(lines) if full else (_read_list(lines), -1)
    if not devices:
        raise ClinfoError(
            "no OpenCL device in the clinfo output (no platform has its driver installed?): "
            "paste `nvidia-smi -q`, `rocm-smi --showallinfo` or `xpu-smi discovery` instead"
        )
    candidates = [d for d in devices if d.kind in ("GPU", None) and d.name]
    if not any(d.kind == "GPU" for d in candidates):
        shown = "; ".join(
            dict.fromkeys(f"{d.name} ({d.kind.lower()})" if d.kind else d.name for d in devices)
        )
        raise ClinfoError(
            f"clinfo lists no GPU, only {shown}: for the CPU paste `lscpu`; for a GPU whose "
            "OpenCL driver is missing paste `nvidia-smi -q` or `lspci -nn | grep -Ei 'vga|3d'`"
        )
    # One GPU listed by two platforms: per name, the most any one platform lists.
    per_platform: dict[str, dict[str, list[_Device]]] = {}
    for device in candidates:
        if device.kind == "GPU":
            per_platform.setdefault(device.name, {}).setdefault(device.platform, []).append(device)
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    drivers: set[str] = set()
    for name, platforms in per_platform.items():
        listed = max(platforms.values(), key=len)
        if len(platforms) > 1:
            notes.append(f"{name!r} is listed by {len(platforms)} OpenCL platforms; counted once")
        for device in listed:
            vendor = _vendor(device)
            memory = _memory(device)
            named = name_device(
                len(gpus),
                vendor or "",
                device.name,
                pci_id=None,
                memory_bytes=memory,
                source=SRC,
                tool="clinfo",
            )
            if not is_compute_gpu(vendor, device.name, named.known):
                left_out.append(device.name)
                continue
            if vendor == "nvidia" and device.keys.get("Driver Version"):
                drivers.add(device.keys["Driver Version"].split()[0])
            elif device.keys.get("Driver Version"):
                notes.append(
                    f"GPU {len(gpus)}: OpenCL driver {device.keys['Driver Version']} "
                    f"({device.platform})"
                )
            gpus.append(
                new_gpu(
                    len(gpus),
                    vendor=vendor or "unknown",
                    backend=BACKENDS.get(vendor or "", "unknown"),
                    source=SRC,
                    missing=MISSING,
                    name=named.name,
                    vram_total_bytes=fact(
                        memory, SRC, "clinfo -l prints no memory" if not full else MISSING
                    ),
                )
            )
    if not gpus:
        raise ClinfoError(
            f"no compute GPU among the OpenCL GPUs clinfo lists ({'; '.join(left_out)}): "
            "paste `lspci -nn | grep -Ei 'vga|3d'` to list the GPUs on the PCI bus"
        )
    gpus, too_many = cap_gpus(gpus)
    left = left_out_note(left_out, "clinfo")
    if left:
        notes.append(left)
    sections: dict[str, object] = {"gpus": gpus}
    if len(drivers) == 1:
        sections["nvml"] = new_nvml(
            source=SRC,
            missing=MISSING,
            driver_version=fact(drivers.pop(), SRC),
            device_count=unknown("clinfo counts OpenCL devices, not the driver's GPUs", SRC),
        )
    cut = too_many or _cut(full, lines, last_line, devices)
    return Imported(empty_profile(**sections), truncated=cut, notes=notes)


def _cut(full: bool, lines: list[str], last_line: int, devices: list[_Device]) -> str | None:
    """Full clinfo ends with its NULL-platform and ICD-loader sections; text that stops inside
    a device's section is cut off."""
    if not full or not devices:
        return None
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    if last_line == last:
        return f"the text ends inside the section of device {devices[-1].name!r}"
    return None


FORMAT = Format(
    name="clinfo output",
    source=SRC,
    sniff=looks_like_clinfo,
    parse=parse_clinfo,
    rank=40,
    example="clinfo",
)
