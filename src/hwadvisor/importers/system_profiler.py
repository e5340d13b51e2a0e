"""macOS ``system_profiler SPHardwareDataType SPDisplaysDataType [SPSoftwareDataType]``, as text
or as ``-json``: the CPU, memory, GPUs and OS of a Mac.

An Apple-silicon GPU is the chip's (``vendor="apple"``, ``backend="mps"``, unified memory); an AMD
GPU in an Intel Mac is reached through MPS too. Integrated Intel graphics and the NVIDIA GPUs of
old Macs are not training devices (no PyTorch backend drives them): they stay out of ``gpus`` and
are named in the notes. Identifiers (serial numbers, hardware UUIDs, user names) are never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    empty_profile,
    new_cpu,
    new_gpu,
)
from hwadvisor.importers.gpustat import json_document
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import CpuInfo, GpuInfo, MemoryInfo, PlatformInfo

SRC = Source.SYSTEM_PROFILER
MISSING = "not in system_profiler output"

#: Keys that identify the machine or its owner: never read, never stored.
_PRIVATE = re.compile(r"serial|uuid|udid|user name|user_name|provisioning", re.IGNORECASE)

_JSON_SNIFF = re.compile(r'"SP(?:Hardware|Displays|Software)DataType"\s*:\s*\[')
_SECTION = re.compile(
    r"(?m)^[ \t]*(?:Hardware Overview|Graphics/Displays|System Software Overview):"
)
_CHIPSET = re.compile(r"(?m)^[ \t]*Chipset Model:")
_GPU_KEYS = re.compile(r"(?m)^[ \t]*(?:VRAM \(|Metal(?: Support| Family)?:|Type:[ \t]*GPU|Vendor:)")
_MODEL_ID = re.compile(r"(?m)^[ \t]*Model Identifier:")
_CPU_KEYS = re.compile(r"(?m)^[ \t]*(?:Chip|Processor Name|Total Number of Cores):")
_KEY_VALUE = re.compile(r"^([A-Za-z][^:]*?):(?:[ \t]+(.*))?$")
_SIZE = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*(KB|MB|GB|TB)\b", re.IGNORECASE)
_GHZ = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*GHz", re.IGNORECASE)
_CORES = re.compile(r"^\s*(\d+)\s*(?:\((.*)\))?")
_TIER = re.compile(r"(\d+)\s+([A-Za-z]+)")
_PROC = re.compile(r"^proc\s+(\d+(?::\d+)*)$")
_APPLE_CHIP = re.compile(r"\bApple (M[0-9]+)\b")
_KHW_ITEM = re.compile(r"^kHW_Apple(M\d+)(Pro|Max|Ultra)?Item$")

_UNIFIED = "unified memory: the GPU shares the Mac's memory"


def looks_like_system_profiler(sample: Sample) -> bool:
    """``-json`` output (an ``SP…DataType`` array), or the text's section titles, or its
    hardware (Model Identifier + Chip/Processor Name) or graphics (Chipset Model + VRAM, Metal
    or Vendor) lines."""
    head = sample.head
    if _JSON_SNIFF.search(head):
        return True
    if _SECTION.search(head):
        return True
    if _MODEL_ID.search(head) and _CPU_KEYS.search(head):
        return True
    return _CHIPSET.search(head) is not None and _GPU_KEYS.search(head) is not None


class SystemProfilerError(ImportFormatError):
    """The text holds nothing system_profiler prints."""


@dataclass
class _Mac:
    """What one paste said, in system_profiler's words (text keys or JSON keys mapped to them)."""

    hardware: dict[str, str] = field(default_factory=dict)
    gpus: list[dict[str, str]] = field(default_factory=list)
    software: dict[str, str] = field(default_factory=dict)
    cut: str | None = None
    """Why the text looks cut off, where it does."""


# --------------------------------------------------------------------------------------------
# Reading: text


def _text(text: str) -> _Mac:
    mac = _Mac()
    section = ""
    gpu: dict[str, str] | None = None
    in_displays = False
    lines = text.splitlines()
    mac.cut = _starts_inside_a_block(lines)
    for raw in lines:
        line = raw.strip()
        match = _KEY_VALUE.match(line)
        if line in ("Hardware:", "Hardware Overview:"):
            section, gpu = "hardware", None
            continue
        if line == "Graphics/Displays:":
            section, gpu = "graphics", None
            continue
        if line in ("Software:", "System Software Overview:"):
            section, gpu = "software", None
            continue
        if match is None:
            continue
        key, value = match.group(1).strip(), (match.group(2) or "").strip()
        if _PRIVATE.search(key):
            continue
        if key == "Chipset Model":
            gpu, in_displays, section = {"Chipset Model": value}, False, "graphics"
            mac.gpus.append(gpu)
            continue
        if key == "Displays" and gpu is not None:
            in_displays = True  # what follows are monitors, not the GPU
            continue
        if gpu is not None and not in_displays and value:
            gpu.setdefault(key, value)
            continue
        if section == "software" and value:
            mac.software.setdefault(key, value)
        elif section in ("hardware", "") and value and gpu is None:
            mac.hardware.setdefault(key, value)
    mac.cut = mac.cut or _cut_gpu_block(mac.gpus)
    return mac


def _starts_inside_a_block(lines: list[str]) -> str | None:
    """The output's first line is a field nested four spaces or more ("      Chipset Model:
    ..."), not a title ("Graphics/Displays:", "Radeon Pro 560X:"): the titles were cut off.
    Lines that are neither (a prompt, a command) are passed over."""
    for raw in lines:
        line = raw.strip()
        match = _KEY_VALUE.match(line)
        if line.endswith(":") and not (match and match.group(2)):
            return None
        if match and match.group(2):
            if len(raw) - len(raw.lstrip(" ")) >= 4:
                return "the text starts inside a block (its titles are not in the text)"
            return None
    return None


def _cut_gpu_block(gpus: list[dict[str, str]]) -> str | None:
    """The last GPU block ends before the Metal line every GPU block has (since macOS 10.11),
    where another block has one or graphics switching says a second GPU follows."""
    if not gpus or any(k.startswith("Metal") for k in gpus[-1]):
        return None
    others = any(k.startswith("Metal") for gpu in gpus[:-1] for k in gpu)
    if others or "Automatic Graphics Switching" in gpus[-1]:
        return f"the block of {gpus[-1]['Chipset Model']} ends before its Metal line"
    return None


# --------------------------------------------------------------------------------------------
# Reading: -json (keys mapped to the text's)

_JSON_HARDWARE = {
    "machine_name": "Model Name",
    "machine_model": "Model Identifier",
    "chip_type": "Chip",
    "cpu_type": "Processor Name",
    "current_processor_speed": "Processor Speed",
    "packages": "Number of Processors",
    "number_processors": "Total Number of Cores",
    "l2_cache_core": "L2 Cache (per Core)",
    "l3_cache": "L3 Cache",
    "platform_cpu_htt": "Hyper-Threading Technology",
    "physical_memory": "Memory",
}
_JSON_GPU = {
    "sppci_model": "Chipset Model",
    "sppci_cores": "Total Number of Cores",
    "spdisplays_vendor": "Vendor",
    "spdisplays_vram": "VRAM (Total)",
    "_spdisplays_vram": "VRAM (Total)",
    "spdisplays_vram_shared": "VRAM (Dynamic, Max)",
    "spdisplays_vram_dynamic": "VRAM (Dynamic, Max)",
    "spdisplays_mtlgpufamilysupport": "Metal Support",
    "spdisplays_metalfamily": "Metal Family",
    "spdisplays_metal": "Metal",
    "sppci_bus": "Bus",
}
_JSON_SOFTWARE = {
    "os_version": "System Version",
    "kernel_version": "Kernel Version",
    "local_host_name": "Local Host Name",
}


def _json(document: Any) -> _Mac:
    mac = _Mac()
    if not isinstance(document, dict):
        raise SystemProfilerError("the JSON document is not an object of SP…DataType arrays")
    for item in _items(document.get("SPHardwareDataType")):
        _map(item, _JSON_HARDWARE, mac.hardware)
    for item in _items(document.get("SPSoftwareDataType")):
        _map(item, _JSON_SOFTWARE, mac.software)
    for item in _items(document.get("SPDisplaysDataType")):
        gpu: dict[str, str] = {}
        _map(item, _JSON_GPU, gpu)
        name = item.get("_name")
        if "Chipset Model" not in gpu and isinstance(name, str):
            # Older macOS names the Apple GPU by a localisation key ("kHW_AppleM1Item").
            khw = _KHW_ITEM.match(name)
            gpu["Chipset Model"] = (
                f"Apple {khw.group(1)}{' ' + khw.group(2) if khw.group(2) else ''}" if khw else name
            )
        if gpu.get("Chipset Model"):
            mac.gpus.append(gpu)
    return mac


def _items(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _map(item: dict[str, Any], names: dict[str, str], into: dict[str, str]) -> None:
    for key, value in item.items():
        if key in names and not _PRIVATE.search(key) and isinstance(value, (str, int, float)):
            into.setdefault(names[key], _json_value(key, value))


def _json_value(key: str, value: str | int | float) -> str:
    text = str(value)
    if key == "number_processors":
        proc = _PROC.match(text)
        if proc:
            return "proc " + proc.group(1)
    if key == "platform_cpu_htt":
        return {"htt_enabled": "Enabled", "htt_disabled": "Disabled"}.get(text, text)
    if key == "sppci_bus":
        return {"spdisplays_builtin": "Built-In", "spdisplays_pcie": "PCIe"}.get(text, text)
    if key.startswith("spdisplays_m"):
        # "spdisplays_metal3" → "Metal 3", "spdisplays_mtlgpufamilyapple7" → "Apple 7".
        family = re.sub(r"^spdisplays_(?:mtlgpufamily)?", "", text)
        return re.sub(
            r"^([a-z]+)(\d+)$", lambda m: f"{m.group(1).capitalize()} {m.group(2)}", family
        )
    if key == "spdisplays_vendor":
        return re.sub(r"^sppci_vendor_", "", text)
    return text


# --------------------------------------------------------------------------------------------
# Facts


def _bytes(text: str | None) -> int | None:
    match = _SIZE.match(text or "")
    if match is None:
        return None
    number = float(match.group(1).replace(",", "."))
    # macOS writes memory sizes in binary units with decimal names ("16 GB" = 16 GiB).
    scale = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}[match.group(2).upper()]
    return int(number * scale)


def _cpu(hw: dict[str, str]) -> CpuInfo:
    chip = hw.get("Chip")
    processor = hw.get("Processor Name")
    if chip and chip.strip().lower() == "unknown":
        chip_fact: Fact[str] = unknown("system_profiler reports the chip as 'Unknown'", SRC)
        chip = None
    else:
        chip_fact = fact(chip or processor, SRC, MISSING)
    apple = bool(chip and chip.startswith("Apple"))
    intel = bool(processor and "Intel" in processor)
    vendor = "Apple" if apple else "Intel" if intel else None
    micro = _APPLE_CHIP.search(chip or "")
    cores_text = hw.get("Total Number of Cores", "")
    total, performance, efficiency = _cores(cores_text)
    threads = _threads(hw.get("Hyper-Threading Technology"), total, apple)
    sockets = _int(hw.get("Number of Processors"))
    speed = _GHZ.match(hw.get("Processor Speed", ""))
    l2 = _bytes(hw.get("L2 Cache (per Core)"))
    model_id = hw.get("Model Identifier", "")
    virtual = model_id.startswith("VirtualMac") or "(Virtual)" in (chip or "")
    return new_cpu(
        source=SRC,
        missing=MISSING,
        vendor=fact(vendor, SRC, MISSING),
        model_name=chip_fact,
        architecture=(
            fact("aarch64" if apple else "x86_64", SRC)
            if apple or intel
            else unknown("neither an Apple chip nor an Intel processor is named", SRC)
        ),
        microarchitecture=(
            fact(f"Apple {micro.group(1)}", SRC)
            if micro
            else unknown("system_profiler names no CPU core design", SRC)
        ),
        sockets=(
            fact(sockets, SRC)
            if sockets
            else fact(1, SRC)
            if apple
            else unknown("no 'Number of Processors' line", SRC)
        ),
        physical_cores=total,
        logical_cores=threads,
        performance_cores=performance,
        efficiency_cores=efficiency,
        base_frequency_mhz=fact(
            float(speed.group(1).replace(",", ".")) * 1000.0 if speed else None,
            SRC,
            "no 'Processor Speed' line (Apple silicon Macs print none)",
        ),
        max_frequency_mhz=unknown("system_profiler prints no maximum clock", SRC),
        l2_cache_bytes=fact(
            l2 * total.value if l2 and total.value else None, SRC, "no 'L2 Cache (per Core)' line"
        ),
        l3_cache_bytes=fact(_bytes(hw.get("L3 Cache")), SRC, "no 'L3 Cache' line"),
        virtualized=(
            fact(True, SRC)
            if virtual
            else fact(False, SRC)
            if model_id
            else unknown("no 'Model Identifier' line", SRC)
        ),
        hypervisor=(
            fact("Apple Virtualization", SRC)
            if virtual
            else unknown("not virtualized" if model_id else MISSING, SRC)
        ),
    )


def _int(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def _cores(text: str) -> tuple[Fact[int], Fact[int], Fact[int]]:
    """ "12 (8 performance and 4 efficiency)", "10", or -json's "proc 12:8:4"."""
    proc = _PROC.match(text.strip())
    if proc:
        numbers = [int(n) for n in proc.group(1).split(":")]
        if len(numbers) == 3:
            return fact(numbers[0], SRC), fact(numbers[1], SRC), fact(numbers[2], SRC)
        why = f"system_profiler's {text!r} does not say which tier is which"
        return fact(numbers[0], SRC), unknown(why, SRC), unknown(why, SRC)
    match = _CORES.match(text)
    if match is None:
        reason = "no 'Total Number of Cores' line" if not text else f"unreadable {text!r}"
        return unknown(reason, SRC), unknown(reason, SRC), unknown(reason, SRC)
    total = fact(int(match.group(1)), SRC)
    tiers = {word.lower(): int(n) for n, word in _TIER.findall(match.group(2) or "")}
    if set(tiers) == {"performance", "efficiency"}:
        return total, fact(tiers["performance"], SRC), fact(tiers["efficiency"], SRC)
    why = (
        f"system_profiler names the core tiers {', '.join(tiers)}"
        if tiers
        else "no performance/efficiency split (not a hybrid CPU)"
    )
    return total, unknown(why, SRC), unknown(why, SRC)


def _threads(htt: str | None, total: Fact[int], apple: bool) -> Fact[int]:
    if total.value is None:
        return unknown(total.reason or MISSING, SRC)
    if apple:
        return Fact[int](
            value=total.value, source=SRC, reason="Apple silicon runs one thread a core"
        )
    if htt == "Enabled":
        return Fact[int](
            value=total.value * 2, source=SRC, reason="Hyper-Threading: two threads per core"
        )
    if htt == "Disabled":
        return fact(total.value, SRC)
    return unknown("no 'Hyper-Threading Technology' line", SRC)


def _vendor(gpu: dict[str, str]) -> str:
    said = (gpu.get("Vendor") or "").lower()
    name = gpu.get("Chipset Model", "")
    for vendor, words in (
        ("apple", ("apple", "0x106b")),
        ("amd", ("amd", "ati", "0x1002")),
        ("intel", ("intel", "0x8086")),
        ("nvidia", ("nvidia", "0x10de")),
    ):
        if any(word in said for word in words):
            return vendor
    lowered = name.lower()
    if lowered.startswith("apple"):
        return "apple"
    if any(word in lowered for word in ("radeon", "amd", "firepro")):
        return "amd"
    if "intel" in lowered:
        return "intel"
    if any(word in lowered for word in ("nvidia", "geforce", "quadro")):
        return "nvidia"
    return "unknown"


def _gpus(found: list[dict[str, str]], notes: list[str]) -> list[GpuInfo]:
    gpus: list[GpuInfo] = []
    for gpu in found:
        name = gpu["Chipset Model"]
        vendor = _vendor(gpu)
        metal = gpu.get("Metal Support") or gpu.get("Metal Family") or gpu.get("Metal")
        if vendor == "intel":
            shared = gpu.get("VRAM (Dynamic, Max)")
            notes.append(
                f"{name}: integrated Intel graphics{f' ({shared} shared)' if shared else ''}, "
                "not a training device: left out of the GPU list"
            )
            continue
        if vendor == "nvidia":
            notes.append(
                f"{name}: no PyTorch backend drives it on macOS (CUDA for macOS ended with "
                "CUDA 10.2; MPS needs an Apple or AMD GPU): left out of the GPU list"
            )
            continue
        if vendor == "unknown":
            notes.append(f"{name}: vendor not recognised: left out of the GPU list")
            continue
        cores = _int(gpu.get("Total Number of Cores"))
        vram = _bytes(gpu.get("VRAM (Total)") or gpu.get("VRAM (Dynamic, Max)"))
        fields: dict[str, Any] = {
            "name": fact(name, SRC),
            "vram_total_bytes": (
                unknown(_UNIFIED, SRC)
                if vendor == "apple"
                else fact(vram, SRC, "no 'VRAM' line for this GPU")
            ),
            "multiprocessor_count": fact(
                cores, SRC, "no 'Total Number of Cores' line for this GPU"
            ),
        }
        if metal:
            notes.append(f"GPU {len(gpus)} ({name}): Metal support: {metal}")
        gpus.append(
            new_gpu(len(gpus), vendor=vendor, backend="mps", source=SRC, missing=MISSING, **fields)
        )
    return gpus


def _platform(sw: dict[str, str]) -> PlatformInfo:
    kernel = sw.get("Kernel Version", "")
    return PlatformInfo(
        os=fact("Darwin", SRC),
        distribution=fact(sw.get("System Version"), SRC, "no SPSoftwareDataType section"),
        kernel=fact(
            kernel.removeprefix("Darwin").strip() or None, SRC, "no SPSoftwareDataType section"
        ),
        python_version=unknown(MISSING, SRC),
        python_implementation=unknown(MISSING, SRC),
        container=unknown(MISSING, SRC),
        wsl=fact(False, SRC),
        rosetta=unknown(MISSING, SRC),
        nvidia_device_nodes=unknown(MISSING, SRC),
    )


def parse_system_profiler(sample: Sample) -> Imported:
    """Read system_profiler's text or ``-json`` output.

    Raises :class:`SystemProfilerError` when neither the hardware nor a GPU can be read.
    """
    document, cut = json_document(sample)
    truncated: str | None = None
    if isinstance(document, dict) and any(k.startswith("SP") for k in document):
        mac = _json(document)
        truncated = cut
    else:
        mac = _text(sample.text)
        truncated = mac.cut
    if not mac.hardware and not mac.gpus and not mac.software:
        raise SystemProfilerError("no hardware, graphics or software section could be read")
    notes: list[str] = []
    model = " ".join(
        part
        for part in (mac.hardware.get("Model Name"), f"({mac.hardware.get('Model Identifier')})")
        if part and part != "(None)"
    )
    if model:
        notes.append(f"Mac model: {model}")
    gpus = _gpus(mac.gpus, notes)
    sections: dict[str, Any] = {"platform": _platform(mac.software), "gpus": gpus}
    if mac.hardware:
        sections["cpu"] = _cpu(mac.hardware)
        sections["memory"] = MemoryInfo(
            total_bytes=fact(_bytes(mac.hardware.get("Memory")), SRC, "no 'Memory' line"),
            available_bytes=unknown(MISSING, SRC),
            swap_total_bytes=unknown(MISSING, SRC),
            swap_free_bytes=unknown(MISSING, SRC),
            cgroup_limit_bytes=unknown("cgroups exist on Linux only", SRC),
        )
    hostname = mac.software.get("Computer Name") or mac.software.get("Local Host Name")
    return Imported(
        empty_profile(**sections), hostname=hostname or None, truncated=truncated, notes=notes
    )


def _near(sample: Sample) -> str | None:
    if _CHIPSET.search(sample.head) and not _GPU_KEYS.search(sample.head):
        return "looks like system_profiler output but has no VRAM, Metal or Vendor line"
    return None


FORMAT = Format(
    name="system_profiler output",
    source=SRC,
    sniff=looks_like_system_profiler,
    parse=parse_system_profiler,
    rank=80,
    near=_near,
    example="system_profiler SPHardwareDataType SPDisplaysDataType SPSoftwareDataType [-json]",
)
