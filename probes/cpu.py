"""CPU facts: model, topology, usable CPUs, clocks, instruction sets, caches, virtualisation.

On Linux procfs and sysfs answer first: they are instant and exact. py-cpuinfo is slow, can hang
(workhorsy/py-cpuinfo#218) and sleeps a second to measure clocks, so the pipeline runs it only when
:func:`needs_cpuinfo` says so, in an isolated child (:func:`cpuinfo_child`), and hands its dict to
:func:`probe_cpu`. psutil fills what is left. Every field ends as a value with its source, or null
with the reason.
"""

from __future__ import annotations

import math
import os
import platform
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import CpuInfo

from . import cgroup
from ._common import PSUTIL_ERRORS
from .isa import isa_from_tokens
from .roots import Roots
from .text import first_value, to_int

T = TypeVar("T")

_LIVE_ROOTS = Roots()


_SYSCTL_TIMEOUT_S = 2.0

# --------------------------------------------------------------------------------------------
# Tables

_X86_VENDORS = {
    "GenuineIntel": "Intel",
    "AuthenticAMD": "AMD",
    "HygonGenuine": "Hygon",
    "CentaurHauls": "Centaur",
    "Shanghai": "Zhaoxin",
}

#: Intel family 6 model -> microarchitecture. Steppings refine 0x55, 0x8E and 0x9E below.
_INTEL_FAMILY6 = {
    0x1A: "Nehalem", 0x1E: "Nehalem", 0x1F: "Nehalem", 0x2E: "Nehalem-EX",
    0x25: "Westmere", 0x2C: "Westmere-EP", 0x2F: "Westmere-EX",
    0x2A: "Sandy Bridge", 0x2D: "Sandy Bridge-EP",
    0x3A: "Ivy Bridge", 0x3E: "Ivy Bridge-EP",
    0x3C: "Haswell", 0x45: "Haswell", 0x46: "Haswell", 0x3F: "Haswell-EP",
    0x3D: "Broadwell", 0x47: "Broadwell", 0x4F: "Broadwell-EP", 0x56: "Broadwell-DE",
    0x4E: "Skylake", 0x5E: "Skylake", 0x55: "Skylake-SP",
    0x8E: "Kaby Lake", 0x9E: "Kaby Lake", 0xA5: "Comet Lake", 0xA6: "Comet Lake",
    0x66: "Cannon Lake", 0x7D: "Ice Lake", 0x7E: "Ice Lake", 0x6A: "Ice Lake-SP",
    0x6C: "Ice Lake-SP", 0x8C: "Tiger Lake", 0x8D: "Tiger Lake", 0xA7: "Rocket Lake",
    0x97: "Alder Lake", 0x9A: "Alder Lake", 0xBE: "Alder Lake-N",
    0xB7: "Raptor Lake", 0xBA: "Raptor Lake", 0xBF: "Raptor Lake",
    0xAA: "Meteor Lake", 0xAC: "Meteor Lake", 0xBD: "Lunar Lake",
    0xB5: "Arrow Lake", 0xC5: "Arrow Lake", 0xC6: "Arrow Lake", 0xCC: "Panther Lake",
    0x8F: "Sapphire Rapids", 0xCF: "Emerald Rapids", 0xAD: "Granite Rapids",
    0xAE: "Granite Rapids-D", 0xAF: "Sierra Forest", 0xDD: "Clearwater Forest",
    0x57: "Knights Landing", 0x85: "Knights Mill",
    0x37: "Silvermont", 0x4D: "Silvermont", 0x4C: "Airmont",
    0x5C: "Goldmont", 0x5F: "Goldmont", 0x7A: "Goldmont Plus",
    0x86: "Tremont", 0x96: "Tremont", 0x9C: "Tremont",
}  # fmt: skip

_ARM_PARTS = {
    0xB02: "ARM11 MPCore", 0xB36: "ARM1136", 0xB56: "ARM1156", 0xB76: "ARM1176",
    0xC05: "Cortex-A5", 0xC07: "Cortex-A7", 0xC08: "Cortex-A8", 0xC09: "Cortex-A9",
    0xC0D: "Cortex-A12", 0xC0E: "Cortex-A17", 0xC0F: "Cortex-A15",
    0xD01: "Cortex-A32", 0xD02: "Cortex-A34", 0xD03: "Cortex-A53", 0xD04: "Cortex-A35",
    0xD05: "Cortex-A55", 0xD06: "Cortex-A65", 0xD07: "Cortex-A57", 0xD08: "Cortex-A72",
    0xD09: "Cortex-A73", 0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76", 0xD0C: "Neoverse N1",
    0xD0D: "Cortex-A77", 0xD0E: "Cortex-A76AE", 0xD40: "Neoverse V1", 0xD41: "Cortex-A78",
    0xD42: "Cortex-A78AE", 0xD43: "Cortex-A65AE", 0xD44: "Cortex-X1", 0xD46: "Cortex-A510",
    0xD47: "Cortex-A710", 0xD48: "Cortex-X2", 0xD49: "Neoverse N2", 0xD4A: "Neoverse E1",
    0xD4B: "Cortex-A78C", 0xD4C: "Cortex-X1C", 0xD4D: "Cortex-A715", 0xD4E: "Cortex-X3",
    0xD4F: "Neoverse V2", 0xD80: "Cortex-A520", 0xD81: "Cortex-A720", 0xD82: "Cortex-X4",
    0xD83: "Neoverse V3AE", 0xD84: "Neoverse V3", 0xD85: "Cortex-X925", 0xD87: "Cortex-A725",
    0xD8E: "Neoverse N3",
}  # fmt: skip

#: MIDR implementer -> (vendor, {part -> core name}).
_ARM_IMPLEMENTERS: dict[int, tuple[str, dict[int, str]]] = {
    0x41: ("ARM", _ARM_PARTS),
    0x42: ("Broadcom", {0x00F: "Brahma-B15", 0x100: "Brahma-B53", 0x516: "ThunderX2"}),
    0x43: ("Cavium", {0x0A1: "ThunderX", 0x0A2: "ThunderX 81xx", 0x0A3: "ThunderX 83xx",
                      0x0AF: "ThunderX2", 0x0B8: "ThunderX3"}),
    0x46: ("Fujitsu", {0x001: "A64FX"}),
    0x48: ("HiSilicon", {0xD01: "TaiShan v110", 0xD02: "TaiShan v120"}),
    0x4E: ("NVIDIA", {0x000: "Denver", 0x003: "Denver 2", 0x004: "Carmel", 0x010: "Olympus"}),
    0x50: ("APM", {0x000: "X-Gene"}),
    0x51: ("Qualcomm", {0x800: "Kryo 2xx Gold", 0x801: "Kryo 2xx Silver",
                        0x802: "Kryo 3xx Gold", 0x803: "Kryo 3xx Silver",
                        0x804: "Kryo 4xx Gold", 0x805: "Kryo 4xx Silver",
                        0xC00: "Falkor", 0xC01: "Saphira", 0x001: "Oryon"}),
    0x61: ("Apple", {0x022: "M1 Icestorm", 0x023: "M1 Firestorm", 0x024: "M1 Pro Icestorm",
                     0x025: "M1 Pro Firestorm", 0x028: "M1 Max Icestorm",
                     0x029: "M1 Max Firestorm", 0x032: "M2 Blizzard", 0x033: "M2 Avalanche"}),
    0x6D: ("Microsoft", {0xD49: "Azure Cobalt 100"}),
    0xC0: ("Ampere", {0xAC3: "Ampere-1", 0xAC4: "Ampere-1a", 0xAC5: "Ampere-1b"}),
}  # fmt: skip


#: DMI strings -> hypervisor, first match wins (Amazon and Google before the KVM they run on).
_HYPERVISOR_MARKERS = (
    ("amazon", "Amazon EC2"),
    ("google", "Google Compute Engine"),
    ("microsoft corporation", "Microsoft Hyper-V"),
    ("hyper-v", "Microsoft Hyper-V"),
    ("vmware", "VMware"),
    ("xen", "Xen"),
    ("kvm", "KVM"),
    ("qemu", "QEMU"),
    ("openstack", "OpenStack (KVM)"),
    ("innotek", "VirtualBox"),
    ("virtualbox", "VirtualBox"),
    ("parallels", "Parallels"),
    ("bhyve", "bhyve"),
)

_MODEL_NAME_GHZ = re.compile(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", re.IGNORECASE)
_APPLE_CHIP = re.compile(r"\bApple (M[0-9]+)\b")
_ARM_MODE = re.compile(r"\((v[0-9]+l)\)")

# --------------------------------------------------------------------------------------------
# Small readers


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def parse_cpulist(text: str) -> set[int]:
    """``"0-3,8,10-11"`` -> ``{0, 1, 2, 3, 8, 10, 11}``; bad pieces are skipped."""
    cpus: set[int] = set()
    for piece in text.strip().split(","):
        first, sep, last = piece.strip().partition("-")
        try:
            if sep:
                cpus.update(range(int(first), int(last) + 1))
            elif first:
                cpus.add(int(first))
        except ValueError:
            continue
    return cpus


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value > 0 else None


def _size_bytes(text: str) -> int | None:
    """``"32K"``, ``"1024 KB"``, ``"32 MiB"`` or ``"524288"`` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def _noted(value: T, source: Source, note: str) -> Fact[T]:
    """A known value that needs a caveat (a current clock standing in for a rated one)."""
    return Fact[T](value=value, source=source, reason=note)


def read_sysctl(*names: str, timeout: float = _SYSCTL_TIMEOUT_S) -> dict[str, str]:
    """``sysctl NAME...`` (macOS, BSD) as ``{name: value}``; ``{}`` when sysctl is missing or slow.

    Unknown names make sysctl exit non-zero but still print the known ones, so the exit status
    is not checked.
    """
    try:
        done = subprocess.run(["sysctl", *names], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return {}
    values: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", errors="replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            values[name.strip()] = value.strip()
    return values


# --------------------------------------------------------------------------------------------
# /proc/cpuinfo


def parse_proc_cpuinfo(text: str) -> list[dict[str, str]]:
    """Split ``/proc/cpuinfo`` into one ``{key: value}`` dict per block, in order.

    Blocks are separated by blank lines; a second ``processor`` line also starts a new block
    (some ARM kernels list the processors one line each). ARM kernels may add a machine-wide
    block (``Hardware``, ``Revision``) after the processors; keep it, callers filter on the
    ``processor`` key. A repeated flags line is joined; other repeated keys keep their first value.
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "processor" and "processor" in current:
            blocks.append(current)
            current = {}
        if key in current:
            if key in ("flags", "Features"):
                current[key] = f"{current[key]} {value}".strip()
            continue
        current[key] = value
    if current:
        blocks.append(current)
    return blocks


def needs_cpuinfo(roots: Roots = _LIVE_ROOTS, system: str | None = None) -> bool:
    """True when procfs cannot answer and the slow py-cpuinfo must run.

    That is: not Linux, ``/proc/cpuinfo`` unreadable, or it has no model (``model name``, or the
    ``CPU part`` on ARM) or no feature flags (``flags`` / ``Features``).
    """
    if (system or platform.system()) != "Linux":
        return True
    text = _read(roots.proc / "cpuinfo")
    if text is None:
        return True
    blocks = parse_proc_cpuinfo(text)
    has_model = first_value(blocks, "model name", "CPU part") is not None
    has_flags = first_value(blocks, "flags", "Features") is not None
    return not (has_model and has_flags)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return str(value)


def cpuinfo_child() -> dict[str, Any]:
    """Run ``cpuinfo.get_cpu_info()`` and return its dict, JSON-safe.

    Meant to run in an isolated child with a time limit (it can hang or fork); errors propagate
    to the isolation layer, which records them.
    """
    import cpuinfo

    raw = cpuinfo.get_cpu_info()
    if not isinstance(raw, dict):
        return {}
    return {str(key): _jsonable(value) for key, value in raw.items()}


# --------------------------------------------------------------------------------------------
# What the probe knows while it works


@dataclass
class _Context:
    roots: Roots
    system: str
    blocks: list[dict[str, str]]
    procs: list[dict[str, str]]
    procfs_note: str
    """Why procfs gave nothing, for reasons."""
    raw: dict[str, Any] | None
    cpuinfo_error: str | None
    psutil: Any
    affinity: Callable[[], set[int]] | None
    sysctl: dict[str, str]
    _topology: dict[int, tuple[str | None, str | None]] | None = field(default=None)

    @property
    def linux(self) -> bool:
        return self.system == "Linux"

    @property
    def arm(self) -> bool:
        return first_value(self.blocks, "CPU implementer") is not None

    def raw_get(self, key: str) -> tuple[Any, str]:
        """py-cpuinfo's value for ``key`` (None when absent) and why it is absent."""
        if self.cpuinfo_error:
            error = self.cpuinfo_error
            return None, error if error.startswith("py-cpuinfo") else f"py-cpuinfo: {error}"
        if self.raw is None:
            return None, "py-cpuinfo was not run"
        value = self.raw.get(key)
        if value in (None, "", [], {}):
            return None, f"py-cpuinfo reported no {key}"
        return value, ""

    def topology(self) -> dict[int, tuple[str | None, str | None]]:
        """cpu -> (physical_package_id, thread siblings) from sysfs, read once."""
        if self._topology is None:
            self._topology = {}
            for cpu_dir in _cpu_dirs(self.roots):
                topo = cpu_dir / "topology"
                package = _read(topo / "physical_package_id")
                siblings = _read(topo / "core_cpus_list") or _read(topo / "thread_siblings_list")
                if package is not None or siblings is not None:
                    self._topology[int(cpu_dir.name[3:])] = (package, siblings)
        return self._topology


def _cpu_dirs(roots: Roots) -> list[Path]:
    base = roots.sys / "devices" / "system" / "cpu"
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    return sorted(
        (p for p in entries if p.name.startswith("cpu") and p.name[3:].isdigit()),
        key=lambda p: int(p.name[3:]),
    )


def _processor_blocks(blocks: list[dict[str, str]]) -> list[dict[str, str]]:
    procs = [b for b in blocks if "processor" in b]
    if procs:
        return procs
    # Old ARM kernels print one "Processor" block without per-CPU entries.
    return [b for b in blocks if {"Processor", "model name", "Features", "flags"} & b.keys()][:1]


def _arm_parts(ctx: _Context) -> list[tuple[str, str | None, int | None, int | None]]:
    """Distinct (vendor, core name, implementer, part) of the processors, in order."""
    seen: list[tuple[str, str | None, int | None, int | None]] = []
    for block in ctx.blocks:
        implementer = to_int(block.get("CPU implementer"), 16)
        part = to_int(block.get("CPU part"), 16)
        if implementer is None and part is None:
            continue
        vendor, parts = _ARM_IMPLEMENTERS.get(implementer or -1, ("", {}))
        if not vendor and implementer is not None:
            vendor = f"implementer 0x{implementer:02x}"
        entry = (vendor, parts.get(part) if part is not None else None, implementer, part)
        if entry not in seen:
            seen.append(entry)
    return seen


# --------------------------------------------------------------------------------------------
# One function per field


def _vendor(ctx: _Context) -> Fact[str]:
    vendor_id = first_value(ctx.procs, "vendor_id")
    if vendor_id:
        return fact(_X86_VENDORS.get(vendor_id, vendor_id.strip()), Source.PROCFS)
    parts = _arm_parts(ctx)
    if parts and parts[0][0]:
        return fact(parts[0][0], Source.PROCFS)
    raw_vendor, why = ctx.raw_get("vendor_id_raw")
    if isinstance(raw_vendor, str):
        return fact(_X86_VENDORS.get(raw_vendor, raw_vendor.strip()), Source.CPUINFO)
    brand = _brand(ctx)
    if brand.value and brand.value.startswith("Apple"):
        return fact("Apple", brand.source or Source.CPUINFO)
    return unknown(f"{ctx.procfs_note}; {why}", Source.CPUINFO)


def _brand(ctx: _Context) -> Fact[str]:
    """The marketing name, from wherever it is spelled out."""
    name = first_value(ctx.procs, "model name")
    if name and not ctx.arm:
        return fact(name, Source.PROCFS)
    raw_brand, why = ctx.raw_get("brand_raw")
    if isinstance(raw_brand, str):
        return fact(raw_brand, Source.CPUINFO)
    sysctl_brand = ctx.sysctl.get("machdep.cpu.brand_string")
    if sysctl_brand:
        return fact(sysctl_brand, Source.SYSCTL)
    return unknown(why, Source.CPUINFO)


def _model_name(ctx: _Context) -> Fact[str]:
    if ctx.arm:
        # ARM kernels print no model name on aarch64 (and only "ARMv7 Processor" on 32-bit): the
        # core names from the MIDR are what lscpu shows too.
        names = [name for _, name, _, _ in _arm_parts(ctx) if name]
        if names:
            return fact(" + ".join(dict.fromkeys(names)), Source.PROCFS)
        kernel_name = first_value(ctx.procs, "model name", "Processor")
        if kernel_name:
            return fact(kernel_name, Source.PROCFS)
    brand = _brand(ctx)
    if brand.known:
        return brand
    parts = _arm_parts(ctx)
    if parts:
        _, _, implementer, part = parts[0]
        return unknown(
            f"no model name in /proc/cpuinfo and CPU part {_hex(part)} of implementer "
            f"{_hex(implementer)} is not in the table; {brand.reason}",
            Source.PROCFS,
        )
    return unknown(f"{ctx.procfs_note}; {brand.reason}", brand.source)


def _hex(value: int | None) -> str:
    return "unknown" if value is None else f"0x{value:x}"


_MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "i386": "i686"}


def _architecture(ctx: _Context) -> Fact[str]:
    if ctx.linux and ctx.procs:
        flags = first_value(ctx.procs, "flags")
        if first_value(ctx.procs, "vendor_id") and flags is not None:
            # "lm" (long mode) is the 64-bit capability bit.
            return fact("x86_64" if "lm" in flags.split() else "i686", Source.PROCFS)
        if ctx.arm:
            # 32-bit kernels name the mode: "ARMv6-compatible processor rev 7 (v6l)".
            mode = _ARM_MODE.search(first_value(ctx.blocks, "model name", "Processor") or "")
            if mode:
                return fact(f"arm{mode.group(1)}", Source.PROCFS)
            arch = (first_value(ctx.blocks, "CPU architecture") or "").strip()
            features = (first_value(ctx.blocks, "Features") or "").split()
            if arch in ("8", "9", "AArch64") or "asimd" in features:
                return fact("aarch64", Source.PROCFS)
            if arch == "7":
                return fact("armv7l", Source.PROCFS)
    if ctx.system == "Darwin" and ctx.sysctl.get("hw.optional.arm64") == "1":
        # Under Rosetta platform.machine() says x86_64 while the CPU is Apple silicon.
        return fact("aarch64", Source.SYSCTL)
    machine = platform.machine()
    if machine:
        return fact(_MACHINE_ALIASES.get(machine.lower(), machine.lower()), Source.PLATFORM)
    return unknown("platform.machine() returned nothing", Source.PLATFORM)


def _intel_microarchitecture(model: int, stepping: int | None) -> str | None:
    name = _INTEL_FAMILY6.get(model)
    if stepping is None:
        return name
    if model == 0x55:
        if stepping >= 10:
            return "Cooper Lake"
        if stepping >= 5:
            return "Cascade Lake"
    if model == 0x8E:
        return {10: "Kaby Lake R", 11: "Whiskey Lake", 12: "Comet Lake"}.get(stepping, name)
    if model == 0x9E and stepping >= 10:
        return "Coffee Lake"
    return name


def _amd_microarchitecture(family: int, model: int) -> str | None:
    if family == 0x17:
        if model in (0x08, 0x18):
            return "Zen+"
        return "Zen" if model < 0x30 else "Zen 2"
    if family == 0x18:  # Hygon Dhyana, a licensed Zen
        return "Zen"
    if family == 0x19:
        if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF:
            return "Zen 4"
        if 0x40 <= model <= 0x4F:
            return "Zen 3+"
        return "Zen 3"
    if family == 0x1A:
        return "Zen 5"
    if family == 0x15:
        if model <= 0x01:
            return "Bulldozer"
        if model <= 0x1F:
            return "Piledriver"
        if model <= 0x3F:
            return "Steamroller"
        return "Excavator"
    if family == 0x16:
        return "Jaguar" if model < 0x30 else "Puma"
    if family == 0x10:
        return "K10"
    return None


def _x86_microarchitecture(
    vendor: str, family: int, model: int, stepping: int | None
) -> str | None:
    if vendor == "Intel" and family == 6:
        return _intel_microarchitecture(model, stepping)
    if vendor in ("AMD", "Hygon"):
        return _amd_microarchitecture(family, model)
    return None


def _microarchitecture(ctx: _Context, vendor: Fact[str], brand: Fact[str]) -> Fact[str]:
    if ctx.arm:
        parts = _arm_parts(ctx)
        names = list(dict.fromkeys(name for _, name, _, _ in parts if name))
        if names:
            return fact(" + ".join(names), Source.PROCFS)
        _, _, implementer, part = parts[0]
        return unknown(
            f"CPU part {_hex(part)} of implementer {_hex(implementer)} is not in the table",
            Source.PROCFS,
        )
    family_text = first_value(ctx.procs, "cpu family")
    model_text = first_value(ctx.procs, "model")
    source = Source.PROCFS
    family, model = to_int(family_text), to_int(model_text)
    stepping = to_int(first_value(ctx.procs, "stepping"))
    why = ctx.procfs_note
    if family is None or model is None:
        raw_family, why = ctx.raw_get("family")
        raw_model, why_model = ctx.raw_get("model")
        raw_stepping, _ = ctx.raw_get("stepping")
        family, model = _positive_int(raw_family), _positive_int(raw_model)
        stepping = raw_stepping if isinstance(raw_stepping, int) else None
        why = why or why_model
        source = Source.CPUINFO
    if family is not None and model is not None and vendor.value:
        name = _x86_microarchitecture(vendor.value, family, model, stepping)
        if name:
            return fact(name, source)
        return unknown(
            f"{vendor.value} family {family} model {model} (0x{model:x}) is not in the table",
            source,
        )
    if brand.value:
        chip = _APPLE_CHIP.search(brand.value)
        if chip:
            return fact(f"Apple {chip.group(1)}", brand.source or Source.CPUINFO)
    return unknown(f"no CPU family/model known: {why or 'not reported'}", source)


def _sockets(ctx: _Context) -> Fact[int]:
    ids = [b.get("physical id") for b in ctx.procs]
    if ids and all(ids):
        return fact(len(set(ids)), Source.PROCFS)
    packages = {pkg for pkg, _ in ctx.topology().values() if pkg is not None and pkg != "-1"}
    if packages:
        return fact(len(packages), Source.SYSFS)
    packages_sysctl = to_int(ctx.sysctl.get("hw.packages"))
    if packages_sysctl:
        return fact(packages_sysctl, Source.SYSCTL)
    if ctx.linux:
        return unknown("no 'physical id' in /proc/cpuinfo and no sysfs CPU topology", Source.SYSFS)
    return unknown(f"the socket count is not exposed on {ctx.system}", Source.PSUTIL)


def _physical_cores(ctx: _Context) -> Fact[int]:
    pairs = [(b.get("physical id"), b.get("core id")) for b in ctx.procs]
    if pairs and all(p and c for p, c in pairs):
        return fact(len(set(pairs)), Source.PROCFS)
    cores = {(pkg, sib) for pkg, sib in ctx.topology().values() if sib is not None}
    if cores:
        return fact(len(cores), Source.SYSFS)
    physical = to_int(ctx.sysctl.get("hw.physicalcpu"))
    if physical:
        return fact(physical, Source.SYSCTL)
    try:
        count = ctx.psutil.cpu_count(logical=False)
    except PSUTIL_ERRORS as exc:
        return unknown(f"psutil.cpu_count(logical=False) failed: {exc}", Source.PSUTIL)
    if _positive_int(count):
        return fact(int(count), Source.PSUTIL)
    # psutil returns None where the OS does not say (ARM Linux: giampaolo/psutil#1078).
    return unknown(
        "no core ids in /proc/cpuinfo or sysfs and psutil.cpu_count(logical=False) "
        f"returned {count!r}",
        Source.PSUTIL,
    )


def _logical_cores(ctx: _Context) -> Fact[int]:
    if ctx.procs:
        return fact(len(ctx.procs), Source.PROCFS)
    logical = to_int(ctx.sysctl.get("hw.logicalcpu"))
    if logical:
        return fact(logical, Source.SYSCTL)
    try:
        count = ctx.psutil.cpu_count(logical=True)
    except PSUTIL_ERRORS:
        count = None
    if _positive_int(count):
        return fact(int(count), Source.PSUTIL)
    os_count = os.cpu_count()
    if os_count:
        return fact(os_count, Source.OS)
    return unknown("neither psutil nor os.cpu_count() know the CPU count", Source.OS)


def _count_cores(ctx: _Context, cpus: set[int]) -> int:
    """Physical cores among ``cpus``: distinct thread-sibling groups, else the CPUs themselves."""
    topology = ctx.topology()
    groups = {topology[cpu] if cpu in topology else (None, str(cpu)) for cpu in cpus}
    return len(groups)


def _hybrid(ctx: _Context) -> tuple[Fact[int], Fact[int]]:
    devices = ctx.roots.sys / "devices"
    core_list = _read(devices / "cpu_core" / "cpus")
    if core_list is not None:
        performance = _count_cores(ctx, parse_cpulist(core_list))
        atom_list = _read(devices / "cpu_atom" / "cpus")
        # Without a cpu_atom PMU no E-core is online (hybrid part with E-cores disabled).
        efficiency = _count_cores(ctx, parse_cpulist(atom_list)) if atom_list else 0
        return fact(performance, Source.SYSFS), fact(efficiency, Source.SYSFS)
    levels = to_int(ctx.sysctl.get("hw.nperflevels"))
    p_cores = to_int(ctx.sysctl.get("hw.perflevel0.physicalcpu"))
    e_cores = to_int(ctx.sysctl.get("hw.perflevel1.physicalcpu"))
    if levels and levels >= 2 and p_cores is not None and e_cores is not None:
        return fact(p_cores, Source.SYSCTL), fact(e_cores, Source.SYSCTL)
    reason = "no hybrid core types exposed"
    source = Source.SYSCTL if ctx.system == "Darwin" else Source.SYSFS
    return unknown(reason, source), unknown(reason, source)


def _affinity(ctx: _Context) -> Fact[int]:
    if ctx.affinity is not None:
        try:
            return fact(len(ctx.affinity()), Source.OS)
        except OSError as exc:
            return unknown(f"CPU affinity unreadable: {exc}", Source.OS)
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return fact(len(getaffinity(0)), Source.OS)
        except OSError as exc:
            return unknown(f"os.sched_getaffinity failed: {exc}", Source.OS)
    try:
        cpus = ctx.psutil.Process().cpu_affinity()
    except PSUTIL_ERRORS as exc:
        return unknown(f"CPU affinity is not exposed on {ctx.system} ({exc})", Source.PSUTIL)
    if isinstance(cpus, list) and cpus:
        return fact(len(cpus), Source.PSUTIL)
    return unknown(f"CPU affinity is not exposed on {ctx.system}", Source.PSUTIL)


def _usable(logical: Fact[int], affinity: Fact[int], quota: Fact[float]) -> Fact[int]:
    limits: list[int] = []
    if logical.value:
        limits.append(logical.value)
    if affinity.value:
        limits.append(affinity.value)
    if quota.value:
        limits.append(max(1, math.ceil(quota.value)))
    if limits:
        return fact(min(limits), Source.DERIVED)
    return unknown(
        "neither the CPU count, the affinity nor a cgroup quota is known", Source.DERIVED
    )


def _sysfs_khz(roots: Roots, name: str) -> float | None:
    """The highest ``name`` (kHz) among the cpufreq policies, in MHz."""
    base = roots.sys / "devices" / "system" / "cpu"
    policies = sorted((base / "cpufreq").glob("policy*")) or [
        d / "cpufreq" for d in _cpu_dirs(roots)
    ]
    values = [v for d in policies if (v := _read_int(d / name)) is not None and v > 0]
    return max(values) / 1000.0 if values else None


def _psutil_freq(ctx: _Context) -> tuple[Any, str]:
    try:
        freq = ctx.psutil.cpu_freq()
    except PSUTIL_ERRORS as exc:
        return None, f"psutil.cpu_freq() failed: {exc}"
    if freq is None:
        return None, "psutil.cpu_freq() returned None"
    return freq, ""


def _freq_value(freq: Any, attr: str) -> float | None:
    value = getattr(freq, attr, None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _frequencies(ctx: _Context, brand: Fact[str]) -> tuple[Fact[float], Fact[float]]:
    freq, freq_why = _psutil_freq(ctx)
    psutil_max = _freq_value(freq, "max")

    # Base: the rated clock.
    base: Fact[float] | None = None
    sysfs_base = _sysfs_khz(ctx.roots, "base_frequency") if ctx.linux else None
    if sysfs_base:
        base = fact(sysfs_base, Source.SYSFS)
    elif brand.value and (ghz := _MODEL_NAME_GHZ.search(brand.value)):
        # Intel prints the rated base clock in the model name ("... CPU @ 2.50GHz").
        base = fact(float(ghz.group(1)) * 1000.0, brand.source or Source.PROCFS)
    elif ctx.system == "Windows" and psutil_max:
        # Windows reports the rated clock as psutil's "max".
        base = fact(psutil_max, Source.PSUTIL)
    elif (hz := to_int(ctx.sysctl.get("hw.cpufrequency"))) and hz > 0:
        base = fact(hz / 1e6, Source.SYSCTL)
    elif not ctx.linux and (advertised := ctx.raw_get("hz_advertised")[0]):
        hz_value = advertised[0] if isinstance(advertised, list) and advertised else None
        if isinstance(hz_value, (int, float)) and hz_value > 0:
            base = fact(hz_value / 1e6, Source.CPUINFO)
    if base is None:
        mhz = first_value(ctx.procs, "cpu MHz")
        current = _freq_value(freq, "current")
        try:
            mhz_value = float(mhz) if mhz else None
        except ValueError:
            mhz_value = None
        if mhz_value and mhz_value > 0:
            in_vm = "hypervisor" in (first_value(ctx.procs, "flags") or "").split()
            note = "current clock from /proc/cpuinfo 'cpu MHz', not the rated base clock"
            base = _noted(
                mhz_value,
                Source.PROCFS,
                note + (" (in a VM: the host's TSC rate)" if in_vm else ""),
            )
        elif current:
            base = _noted(current, Source.PSUTIL, "current clock from psutil, not the rated base")
        else:
            base = unknown(
                "no base_frequency in sysfs cpufreq, no clock in the model name; "
                + (freq_why or "psutil reports no current clock"),
                Source.SYSFS if ctx.linux else Source.PSUTIL,
            )

    # Max: the highest (turbo) clock.
    maximum: Fact[float]
    sysfs_max = _sysfs_khz(ctx.roots, "cpuinfo_max_freq") if ctx.linux else None
    darwin_max = to_int(ctx.sysctl.get("hw.cpufrequency_max"))
    if sysfs_max:
        maximum = fact(sysfs_max, Source.SYSFS)
    elif ctx.system == "Windows":
        maximum = unknown(
            "Windows reports only the rated clock (used as the base frequency)", Source.PSUTIL
        )
    elif darwin_max and darwin_max > 0:
        maximum = fact(darwin_max / 1e6, Source.SYSCTL)
    elif psutil_max:
        maximum = fact(psutil_max, Source.PSUTIL)
    else:
        why = freq_why or "psutil.cpu_freq() reports no maximum"
        prefix = "no cpufreq in sysfs (usual in VMs and containers); " if ctx.linux else ""
        maximum = unknown(prefix + why, Source.PSUTIL)
    return base, maximum


_isa_from_tokens = isa_from_tokens


def _isa(ctx: _Context) -> Fact[list[str]]:
    sets = [set(flags.split()) for b in ctx.procs if (flags := b.get("flags") or b.get("Features"))]
    if not sets:
        # Old ARM kernels print Features once, outside the processor entries.
        machine_wide = first_value(ctx.blocks, "flags", "Features")
        sets = [set(machine_wide.split())] if machine_wide else []
    if sets:
        # A feature counts only if every CPU has it: a thread may run anywhere.
        return fact(_isa_from_tokens(set.intersection(*sets)), Source.PROCFS)
    optional = [
        name.removeprefix("hw.optional.").removeprefix("arm.")
        for name, value in ctx.sysctl.items()
        if name.startswith("hw.optional.") and value == "1"
    ]
    if optional:
        return fact(_isa_from_tokens(optional), Source.SYSCTL)
    flags, why = ctx.raw_get("flags")
    if isinstance(flags, list):
        return fact(_isa_from_tokens(str(f) for f in flags), Source.CPUINFO)
    return unknown(f"{ctx.procfs_note}; {why}", Source.CPUINFO)


_CACHE_KEYS = {(1, "Data"): "l1d", (2, "Unified"): "l2", (3, "Unified"): "l3"}


def _sysfs_caches(roots: Roots) -> dict[str, int]:
    """Totals across cache instances; an instance is counted once however many CPUs share it."""
    totals: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for cpu_dir in _cpu_dirs(roots):
        try:
            indexes = sorted((cpu_dir / "cache").glob("index*"))
        except OSError:
            continue
        for index in indexes:
            shared = _read(index / "shared_cpu_list") or _read(index / "shared_cpu_map")
            key = (index.name, shared or cpu_dir.name)
            if key in seen:
                continue
            seen.add(key)
            level, kind, size = (
                _read_int(index / "level"),
                _read(index / "type"),
                _read(index / "size"),
            )
            name = _CACHE_KEYS.get((level or 0, kind or ""))
            size_bytes = _size_bytes(size) if size else None
            if name and size_bytes:
                totals[name] = totals.get(name, 0) + size_bytes
    return totals


def _caches(
    ctx: _Context, vendor: Fact[str], sockets: Fact[int], physical: Fact[int]
) -> tuple[Fact[int], Fact[int], Fact[int]]:
    found: dict[str, Fact[int]] = {}
    for name, total in (_sysfs_caches(ctx.roots) if ctx.linux else {}).items():
        found[name] = fact(total, Source.SYSFS)
    if ctx.sysctl:
        for name, total in _darwin_caches(ctx.sysctl).items():
            found.setdefault(name, fact(total, Source.SYSCTL))
    # /proc/cpuinfo "cache size" is one instance of the last level the kernel knows: the L2 per
    # core on AMD, the L3 per package on Intel.
    cache_size = first_value(ctx.procs, "cache size")
    size = _size_bytes(cache_size) if cache_size else None
    if size and vendor.value in ("AMD", "Hygon") and "l2" not in found and physical.value:
        found["l2"] = _noted(
            size * physical.value, Source.PROCFS, "/proc/cpuinfo 'cache size' (per core) × cores"
        )
    if size and vendor.value == "Intel" and "l3" not in found and sockets.value:
        found["l3"] = _noted(
            size * sockets.value,
            Source.PROCFS,
            "/proc/cpuinfo 'cache size' (per package) × sockets",
        )
    results: list[Fact[int]] = []
    for name, raw_key in (
        ("l1d", "l1_data_cache_size"),
        ("l2", "l2_cache_size"),
        ("l3", "l3_cache_size"),
    ):
        if name in found:
            results.append(found[name])
            continue
        raw_value, why = ctx.raw_get(raw_key)
        raw_bytes = (
            raw_value if isinstance(raw_value, int) and not isinstance(raw_value, bool) else None
        )
        if isinstance(raw_value, str):
            raw_bytes = _size_bytes(raw_value)
        if raw_bytes:
            results.append(
                _noted(raw_bytes, Source.CPUINFO, "as py-cpuinfo reports it: may be one instance")
            )
            continue
        where = "no sysfs cache information" if ctx.linux else f"no cache sizes on {ctx.system}"
        results.append(unknown(f"{where}; {why}", Source.CPUINFO))
    return results[0], results[1], results[2]


def _darwin_caches(sysctl: dict[str, str]) -> dict[str, int]:
    totals: dict[str, int] = {}
    levels = to_int(sysctl.get("hw.nperflevels")) or 0
    for level in range(levels):
        prefix = f"hw.perflevel{level}."
        cores = to_int(sysctl.get(prefix + "physicalcpu"))
        l1d = to_int(sysctl.get(prefix + "l1dcachesize"))
        l2 = to_int(sysctl.get(prefix + "l2cachesize"))
        per_l2 = to_int(sysctl.get(prefix + "cpusperl2"))
        if cores and l1d:
            totals["l1d"] = totals.get("l1d", 0) + cores * l1d
        if cores and l2 and per_l2:
            totals["l2"] = totals.get("l2", 0) + math.ceil(cores / per_l2) * l2
    if not levels:
        cores = to_int(sysctl.get("hw.physicalcpu"))
        l1d, l2 = to_int(sysctl.get("hw.l1dcachesize")), to_int(sysctl.get("hw.l2cachesize"))
        if cores and l1d:
            totals["l1d"] = cores * l1d
        if cores and l2:
            totals["l2"] = cores * l2  # Intel Macs: one L2 per core
    l3 = to_int(sysctl.get("hw.l3cachesize"))
    if l3:
        totals["l3"] = l3 * (to_int(sysctl.get("hw.packages")) or 1)
    return totals


def _numa(ctx: _Context) -> Fact[int]:
    base = ctx.roots.sys / "devices" / "system" / "node"
    try:
        nodes = [p for p in base.iterdir() if p.name.startswith("node") and p.name[4:].isdigit()]
    except OSError:
        if ctx.linux:
            return unknown("no NUMA nodes in sysfs", Source.SYSFS)
        return unknown(
            f"NUMA topology is read from Linux sysfs only, not on {ctx.system}", Source.SYSFS
        )
    if nodes:
        return fact(len(nodes), Source.SYSFS)
    return unknown("no NUMA nodes in sysfs", Source.SYSFS)


def _dmi_hypervisor(roots: Roots) -> str | None:
    hv_type = (_read(roots.sys / "hypervisor" / "type") or "").lower()
    dmi = roots.sys / "class" / "dmi" / "id"
    strings = " ".join(
        (_read(dmi / name) or "") for name in ("sys_vendor", "product_name", "bios_vendor")
    ).lower()
    if "microsoft corporation" in strings and "virtual machine" not in strings:
        strings = strings.replace("microsoft corporation", "")  # a Surface is not Hyper-V
    for marker, name in _HYPERVISOR_MARKERS:
        if marker in strings:
            return name
    if hv_type == "xen":
        return "Xen"
    return None


def _virtualisation(ctx: _Context) -> tuple[Fact[bool], Fact[str]]:
    named = _dmi_hypervisor(ctx.roots) if ctx.linux else None
    flags = first_value(ctx.procs, "flags")
    virtualized: Fact[bool]
    if flags is not None:
        virtualized = fact("hypervisor" in flags.split(), Source.PROCFS)
    elif named:
        virtualized = fact(True, Source.SYSFS)
    elif (vmm := ctx.sysctl.get("kern.hv_vmm_present")) in ("0", "1"):
        virtualized = fact(vmm == "1", Source.SYSCTL)
    else:
        raw_flags, why = ctx.raw_get("flags")
        if isinstance(raw_flags, list) and any(f in raw_flags for f in ("sse2", "avx", "lm")):
            virtualized = fact("hypervisor" in raw_flags, Source.CPUINFO)
        else:
            reason = "no 'hypervisor' CPU flag on this architecture and no hypervisor in sysfs/DMI"
            virtualized = unknown(reason if ctx.linux else f"{reason}; {why}", Source.PROCFS)
    if named and virtualized.value is not False:
        return virtualized, fact(named, Source.SYSFS)
    if virtualized.value is False:
        return virtualized, unknown("not virtualized", virtualized.source)
    if not ctx.linux:
        return virtualized, unknown(
            f"the hypervisor is read from Linux sysfs/DMI only, not on {ctx.system}", Source.SYSFS
        )
    return virtualized, unknown(
        "the hypervisor does not name itself in /sys/hypervisor or DMI", Source.SYSFS
    )


# --------------------------------------------------------------------------------------------
# The probe


def probe_cpu(
    roots: Roots = _LIVE_ROOTS,
    *,
    cpuinfo_raw: dict[str, Any] | None = None,
    cpuinfo_error: str | None = None,
    psutil_module: Any = None,
    affinity: Callable[[], set[int]] | None = None,
    system: str | None = None,
) -> CpuInfo:
    """Every CPU fact: procfs/sysfs on Linux, then ``cpuinfo_raw`` (py-cpuinfo's dict) and psutil.

    ``cpuinfo_error`` says why py-cpuinfo gave nothing ("timeout"); facts only it could give are
    then null with that reason. ``affinity`` and ``psutil_module`` replace the live ones in tests.
    """
    system = system or platform.system()
    blocks: list[dict[str, str]] = []
    procfs_note = f"no /proc/cpuinfo on {system}"
    if system == "Linux":
        text = _read(roots.proc / "cpuinfo")
        if text is None:
            procfs_note = "/proc/cpuinfo unreadable"
        else:
            blocks = parse_proc_cpuinfo(text)
            procfs_note = "/proc/cpuinfo does not say"
    ctx = _Context(
        roots=roots,
        system=system,
        blocks=blocks,
        procs=_processor_blocks(blocks),
        procfs_note=procfs_note,
        raw=cpuinfo_raw,
        cpuinfo_error=cpuinfo_error,
        psutil=psutil_module if psutil_module is not None else psutil,
        affinity=affinity,
        sysctl=read_sysctl("hw", "machdep.cpu.brand_string", "kern.hv_vmm_present")
        if system == "Darwin"
        else {},
    )
    vendor = _vendor(ctx)
    brand = _brand(ctx)
    sockets = _sockets(ctx)
    physical = _physical_cores(ctx)
    logical = _logical_cores(ctx)
    performance, efficiency = _hybrid(ctx)
    affinity_cpus = _affinity(ctx)
    quota = (
        cgroup.cpu_quota(roots)
        if ctx.linux
        else unknown(f"cgroups exist on Linux only, not on {system}", Source.CGROUP)
    )
    base, maximum = _frequencies(ctx, brand)
    l1d, l2, l3 = _caches(ctx, vendor, sockets, physical)
    virtualized, hypervisor = _virtualisation(ctx)
    return CpuInfo(
        vendor=vendor,
        model_name=_model_name(ctx),
        architecture=_architecture(ctx),
        microarchitecture=_microarchitecture(ctx, vendor, brand),
        sockets=sockets,
        physical_cores=physical,
        logical_cores=logical,
        performance_cores=performance,
        efficiency_cores=efficiency,
        affinity_cpus=affinity_cpus,
        cgroup_cpu_quota=quota,
        usable_cpus=_usable(logical, affinity_cpus, quota),
        base_frequency_mhz=base,
        max_frequency_mhz=maximum,
        isa_features=_isa(ctx),
        l1d_cache_bytes=l1d,
        l2_cache_bytes=l2,
        l3_cache_bytes=l3,
        numa_nodes=_numa(ctx),
        virtualized=virtualized,
        hypervisor=hypervisor,
    )
