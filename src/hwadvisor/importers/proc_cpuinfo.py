"""``cat /proc/cpuinfo`` pasted: the CPU section of a profile.

x86 kernels print, per logical CPU, the vendor, family/model, the brand string, the flags and the
topology (``physical id``, ``core id``, ``siblings`` = logical CPUs per package, ``cpu cores`` =
cores per package). Arm kernels print the MIDR fields (``CPU implementer``, ``CPU part``) and
``Features``; the core design (Neoverse-N1, Cortex-A72) is named from the part, as lscpu names it.

People paste the first processor or two: the counts then come from ``siblings`` × packages where
the package count is knowable, and :attr:`Imported.truncated` says the text is cut. The tables
(x86 family/model → microarchitecture, Arm MIDR → core) are the CPU probe's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwadvisor.importers.base import Imported, ImportFormatError, Sample, empty_profile, new_cpu
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import CpuInfo
from hwadvisor.probes.isa import isa_from_tokens
from hwadvisor.probes.text import first_value, to_int

if TYPE_CHECKING:
    from types import ModuleType

SRC = Source.PROCFS
MISSING = "not in /proc/cpuinfo"

_PROCESSOR = re.compile(r"(?m)^processor[ \t]*:[ \t]*\d+[ \t]*$")
#: Keys only a /proc/cpuinfo entry has (x86, Arm).
_ENTRY = re.compile(
    r"(?m)^(?:vendor_id|model name|cpu family|flags|siblings|core id|BogoMIPS|bogomips|"
    r"Features|CPU implementer|CPU part)[ \t]*:"
)
#: A /proc/cpuinfo line: ``key<tabs or spaces>: value`` (a prompt line or Markdown is not one).
_LINE = re.compile(r"[A-Za-z][A-Za-z0-9 \t_()./-]{0,40}:(?:[ \t]|$)")
_COMMAND = re.compile(r"/proc/cpuinfo")
_HEAD = re.compile(r"\b(head|grep|sed|awk)\b")
_MODE = re.compile(r"\((v[0-9]+l)\)")

#: Brand strings of parts sold only for one-socket machines: a cut paste of one still says how
#: many packages there are.
_CLIENT = re.compile(
    r"\b(Core\(TM\)|Core Ultra|Celeron|Pentium|Atom|Ryzen|Athlon|Threadripper)\b|"
    r"\bIntel\(R\) Core\b|\bEPYC \d{4}P\b",  # EPYC "P" models are one-socket parts
    re.IGNORECASE,
)

#: Intel hybrid designs whose P-cores run two threads and E-cores one.
_HYBRID_HT = {"Alder Lake", "Raptor Lake", "Meteor Lake"}
#: Intel hybrid designs without Hyper-Threading: /proc/cpuinfo does not tell the cores apart.
_HYBRID_NO_HT = {"Lunar Lake", "Arrow Lake", "Panther Lake"}

#: Arm core designs that are the "little" (efficiency) cores of big.LITTLE / DynamIQ parts.
_LITTLE = re.compile(r"^(Cortex-A(?:5|7|35|53|55|510|520)|Icestorm|Blizzard|Sawtooth)\b")
#: Arm designs that run more than one thread per core (the entries are threads, not cores).
_ARM_SMT = {"ThunderX2", "ThunderX3", "Neoverse-E1", "Cortex-A65", "Cortex-A65AE"}


class ProcCpuinfoError(ImportFormatError):
    """The text holds no /proc/cpuinfo processor entry."""


def looks_like_proc_cpuinfo(text: str) -> bool:
    """A ``processor : N`` line and a key only /proc/cpuinfo entries have."""
    return _PROCESSOR.search(text) is not None and _ENTRY.search(text) is not None


@dataclass
class _Text:
    """The entries of the paste and what it says about being whole."""

    entries: list[dict[str, str]]
    """Processor entries (with a ``processor`` line), in order."""
    fragments: list[dict[str, str]]
    """Every block with entry keys, a leading part-entry (the paste starts mid-way) included."""
    starts_midway: bool
    last_cut: bool
    head: bool
    """The paste is the output of ``head``/``grep`` over /proc/cpuinfo, not the whole file."""
    x86: bool


def _probe() -> ModuleType:
    # The CPU probe holds the tables; imported here, when a paste is read, because it imports
    # psutil (which other imports need not load).
    from hwadvisor.probes import cpu

    return cpu


def _read(text: str) -> _Text:
    lines = text.splitlines()
    head = any(_COMMAND.search(line) and _HEAD.search(line) for line in lines[:40])
    kept = [line if (not line.strip() or _LINE.match(line.strip())) else "" for line in lines]
    blocks: list[dict[str, str]] = _probe().parse_proc_cpuinfo("\n".join(kept))
    fragments = [b for b in blocks if "processor" in b or any(_ENTRY.match(f"{k}:") for k in b)]
    entries = [b for b in fragments if "processor" in b and b["processor"].isdigit()]
    if not entries:
        raise ProcCpuinfoError("no 'processor : N' entry")
    first = int(entries[0]["processor"])
    starts_midway = first != 0 or "processor" not in fragments[0]
    x86 = any("vendor_id" in b or "flags" in b or "cpu family" in b for b in fragments)
    arm = any("CPU implementer" in b or "Features" in b for b in fragments)
    # Every x86 entry ends with "power management", every arm64 one with "CPU revision" (old
    # 32-bit kernels print the CPU lines once, after the entries).
    last, after = entries[-1], fragments[fragments.index(entries[-1]) + 1 :]
    if x86:
        last_cut = "power management" not in last
    elif arm:
        last_cut = "CPU revision" not in last and not any("CPU revision" in b for b in after)
    else:
        last_cut = False
    return _Text(entries, fragments, starts_midway, last_cut, head, x86)


def parse_proc_cpuinfo_text(text: str) -> Imported:
    """Read pasted /proc/cpuinfo into the CPU section of a profile.

    Raises :class:`ProcCpuinfoError` when the text holds no processor entry.
    """
    read = _read(text)
    cpu, truncated, notes = (_x86 if read.x86 else _arm)(read)
    return Imported(empty_profile(cpu=cpu), truncated=truncated, notes=notes)


def _isa(fragments: list[dict[str, str]], key: str) -> Fact[list[str]]:
    sets = [set(b[key].split()) for b in fragments if b.get(key)]
    if not sets:
        return unknown(f"no '{key}' line in the text", SRC)
    # A feature counts only if every CPU pasted has it: a thread may run on any of them.
    return fact(isa_from_tokens(set.intersection(*sets)), SRC)


def _cut_reasons(read: _Text) -> list[str]:
    reasons = []
    if read.head:
        reasons.append("the text is /proc/cpuinfo filtered or cut by head/grep")
    if read.starts_midway:
        first = read.entries[0]["processor"]
        reasons.append(f"the text starts part-way through /proc/cpuinfo (first entry: {first})")
    if read.last_cut:
        reasons.append(f"the entry of processor {read.entries[-1]['processor']} is cut off")
    return reasons


# --------------------------------------------------------------------------------------------
# x86


def _x86(read: _Text) -> tuple[CpuInfo, str | None, list[str]]:
    probe = _probe()
    entries, fragments = read.entries, read.fragments
    vendor_id = first_value(fragments, "vendor_id")
    vendor = probe._X86_VENDORS.get(vendor_id, vendor_id) if vendor_id else None
    model = first_value(fragments, "model name")
    flags = first_value(fragments, "flags")
    reasons = _cut_reasons(read)
    siblings = to_int(first_value(fragments, "siblings"))
    per_package = to_int(first_value(fragments, "cpu cores"))
    seen = {i for b in fragments if (i := b.get("physical id"))}
    # A paste that looks whole but holds fewer entries than the packages seen have threads.
    expected = siblings * len(seen) if siblings and seen else 0
    short = len(entries) < expected and not reasons
    if short:
        reasons.append(
            f"{len(entries)} of the {expected} processors ('siblings' × packages) are in the text"
        )
    cut = bool(reasons)
    sockets = _x86_sockets(entries, cut, model, seen)
    logical, physical = _x86_counts(entries, cut, sockets, siblings, per_package)
    if cut and not short and logical.value and len(entries) < logical.value:
        reasons.append(f"{len(entries)} of the {logical.value} processors are in the text")
    micro = _x86_micro(probe, fragments, vendor)
    performance, efficiency = _hybrid(entries, cut, micro.value, siblings, per_package, sockets)
    ghz = probe._MODEL_NAME_GHZ.search(model) if model else None
    cpu = new_cpu(
        source=SRC,
        missing=MISSING,
        vendor=fact(vendor, SRC, MISSING),
        model_name=fact(model, SRC, MISSING),
        architecture=(
            fact("x86_64" if "lm" in flags.split() else "i686", SRC)
            if flags
            else unknown("no 'flags' line in the text", SRC)
        ),
        microarchitecture=micro,
        sockets=sockets,
        physical_cores=physical,
        logical_cores=logical,
        performance_cores=performance,
        efficiency_cores=efficiency,
        base_frequency_mhz=fact(
            float(ghz.group(1)) * 1000.0 if ghz else None, SRC, "no rated clock in the model name"
        ),
        max_frequency_mhz=unknown("/proc/cpuinfo gives the current clock only", SRC),
        isa_features=_isa(fragments, "flags"),
        virtualized=(
            fact("hypervisor" in flags.split(), SRC)
            if flags
            else unknown("no 'flags' line in the text", SRC)
        ),
        hypervisor=unknown("/proc/cpuinfo does not name the hypervisor", SRC),
    )
    return cpu, "; ".join(reasons) or None, []


def _x86_sockets(
    entries: list[dict[str, str]], cut: bool, model: str | None, seen: set[str]
) -> Fact[int]:
    if not cut:
        if seen and all(b.get("physical id") for b in entries):
            return fact(len(seen), SRC)
        return unknown("no 'physical id' lines in the text", SRC)
    if model and _CLIENT.search(model):
        return Fact[int](
            value=1, source=SRC, reason=f"{model} is a one-socket part (the text is cut off)"
        )
    numbers = sorted(to_int(i) or 0 for i in seen)
    highest = f"; 'physical id' goes up to {numbers[-1]}" if numbers and numbers[-1] else ""
    return unknown(f"the text is cut off{highest}: the package count is unknown", SRC)


def _x86_counts(
    entries: list[dict[str, str]],
    cut: bool,
    sockets: Fact[int],
    siblings: int | None,
    per_package: int | None,
) -> tuple[Fact[int], Fact[int]]:
    if not cut:
        logical: Fact[int] = fact(len(entries), SRC)
        pairs = [(b.get("physical id"), b.get("core id")) for b in entries]
        if all(p and c for p, c in pairs):
            return logical, fact(len(set(pairs)), SRC)
        return logical, unknown("no 'physical id'/'core id' lines in the text", SRC)
    if sockets.value is None:
        why = f"{sockets.reason}, so the CPU count is too"
        return unknown(why, SRC), unknown(why, SRC)
    packages = sockets.value
    logical = (
        Fact[int](value=siblings * packages, source=SRC, reason="'siblings' × packages")
        if siblings
        else unknown("no 'siblings' line in the cut-off text", SRC)
    )
    physical = (
        Fact[int](value=per_package * packages, source=SRC, reason="'cpu cores' × packages")
        if per_package
        else unknown("no 'cpu cores' line in the cut-off text", SRC)
    )
    return logical, physical


def _x86_micro(probe: Any, fragments: list[dict[str, str]], vendor: str | None) -> Fact[str]:
    family = to_int(first_value(fragments, "cpu family"))
    model = to_int(first_value(fragments, "model"))
    stepping = to_int(first_value(fragments, "stepping"))
    if family is None or model is None or not vendor:
        return unknown("no 'cpu family'/'model' lines in the text", SRC)
    name = probe._x86_microarchitecture(vendor, family, model, stepping)
    return fact(
        name, SRC, f"{vendor} family {family} model {model} (0x{model:x}) is not in the table"
    )


def _hybrid(
    entries: list[dict[str, str]],
    cut: bool,
    micro: str | None,
    siblings: int | None,
    per_package: int | None,
    sockets: Fact[int],
) -> tuple[Fact[int], Fact[int]]:
    if micro in _HYBRID_NO_HT:
        why = f"{micro} has no Hyper-Threading: its P- and E-cores look alike in /proc/cpuinfo"
        return unknown(why, SRC), unknown(why, SRC)
    if micro not in _HYBRID_HT:
        why = f"not a hybrid CPU ({micro})" if micro else "no hybrid core types in /proc/cpuinfo"
        return unknown(why, SRC), unknown(why, SRC)
    pairs = [(b.get("physical id"), b.get("core id")) for b in entries]
    if not cut and all(p and c for p, c in pairs):
        threads: dict[tuple[str | None, str | None], int] = {}
        for pair in pairs:
            threads[pair] = threads.get(pair, 0) + 1
        if any(n > 1 for n in threads.values()):
            # P-cores run two threads, E-cores one.
            p_cores = sum(1 for n in threads.values() if n > 1)
            return fact(p_cores, SRC), fact(len(threads) - p_cores, SRC)
    elif siblings and per_package and sockets.value and siblings > per_package:
        # threads = 2 P + E and cores = P + E, per package.
        p_cores, e_cores = siblings - per_package, 2 * per_package - siblings
        if e_cores >= 0:
            how = "from 'siblings' and 'cpu cores' (P-cores run two threads, E-cores one)"
            return (
                Fact[int](value=p_cores * sockets.value, source=SRC, reason=how),
                Fact[int](value=e_cores * sockets.value, source=SRC, reason=how),
            )
    why = f"{micro} with Hyper-Threading off (or not visible): P- and E-cores look alike"
    return unknown(why, SRC), unknown(why, SRC)


# --------------------------------------------------------------------------------------------
# Arm


def _arm_name(vendor: str, name: str) -> str:
    """The probe's core name as lscpu spells it: ``Neoverse-N1``, ``Firestorm-M1-Pro``."""
    if vendor == "Apple":
        chip, _, core = name.rpartition(" ")
        if chip:
            return f"{core}-{chip.replace(' ', '-')}"
    return name.replace(" ", "-")


def _arm_core(probe: Any, block: dict[str, str]) -> tuple[str | None, str | None, str]:
    """(vendor, core design, how the MIDR reads) of one entry."""
    implementer = to_int(block.get("CPU implementer"), 16)
    part = to_int(block.get("CPU part"), 16)
    if implementer is None:
        return None, None, "no 'CPU implementer' line"
    vendor, parts = probe._ARM_IMPLEMENTERS.get(implementer, (None, {}))
    name = parts.get(part) if part is not None else None
    where = f"CPU part 0x{part or 0:x} of implementer 0x{implementer:x}"
    return vendor or f"implementer 0x{implementer:x}", name and _arm_name(vendor, name), where


def _arm(read: _Text) -> tuple[CpuInfo, str | None, list[str]]:
    probe = _probe()
    entries, fragments = read.entries, read.fragments
    cores = [_arm_core(probe, b) for b in fragments if "CPU implementer" in b]
    names = list(dict.fromkeys(name for _, name, _ in cores if name))
    vendor = next((v for v, _, _ in cores if v), None)
    kernel_name = first_value(fragments, "model name", "Processor")
    model: Fact[str]
    if names:
        model = fact(" + ".join(names), SRC)
    elif kernel_name:
        model = fact(kernel_name, SRC)
    elif cores:
        model = unknown(f"{cores[0][2]} is not in the table", SRC)
    else:
        model = unknown(MISSING, SRC)
    reasons = _cut_reasons(read)
    notes = []
    logical: Fact[int]
    physical: Fact[int]
    if reasons:
        last = read.entries[-1]["processor"]
        why = f"the text is cut off after processor {last}: Arm kernels print no CPU count"
        logical = physical = unknown(why, SRC)
    elif len(entries) == 1:
        why = (
            "one processor entry: Arm kernels print no CPU count, and one entry is a one-CPU "
            "machine or the first of many"
        )
        logical = physical = unknown(why, SRC)
        notes.append("only processor 0 is in the text; the CPU count is left unknown")
    else:
        logical = fact(len(entries), SRC)
        known = [name for _, name, _ in cores]
        if known and all(known) and not any(n in _ARM_SMT for n in names):
            physical = fact(len(entries), SRC)
        else:
            physical = unknown("a core design that may run several threads per core", SRC)
    performance, efficiency = _big_little(cores, bool(reasons) or len(entries) == 1)
    arch = (first_value(fragments, "CPU architecture") or "").strip()
    features = (first_value(fragments, "Features") or "").split()
    mode = _MODE.search(kernel_name or "")
    architecture: Fact[str]
    if mode:
        architecture = fact(f"arm{mode.group(1)}", SRC)
    elif arch in ("8", "9", "AArch64") or "asimd" in features:
        architecture = fact("aarch64", SRC)
    elif arch == "7":
        architecture = fact("armv7l", SRC)
    else:
        architecture = unknown("no 'CPU architecture' line in the text", SRC)
    cpu = new_cpu(
        source=SRC,
        missing=MISSING,
        vendor=fact(vendor, SRC, MISSING),
        model_name=model,
        architecture=architecture,
        # On Arm the core design is the microarchitecture (lscpu's "Model name").
        microarchitecture=(
            fact(" + ".join(names), SRC)
            if names
            else unknown(model.reason or "the core design is not in the table", SRC)
        ),
        sockets=unknown("Arm kernels print no 'physical id'", SRC),
        physical_cores=physical,
        logical_cores=logical,
        performance_cores=performance,
        efficiency_cores=efficiency,
        base_frequency_mhz=unknown("Arm kernels print no clock in /proc/cpuinfo", SRC),
        max_frequency_mhz=unknown("Arm kernels print no clock in /proc/cpuinfo", SRC),
        isa_features=_isa(fragments, "Features"),
        virtualized=unknown("Arm kernels print no 'hypervisor' flag", SRC),
        hypervisor=unknown("Arm kernels print no 'hypervisor' flag", SRC),
    )
    return cpu, "; ".join(reasons) or None, notes


def _big_little(
    cores: list[tuple[str | None, str | None, str]], cut: bool
) -> tuple[Fact[int], Fact[int]]:
    designs = {name for _, name, _ in cores}
    if len(designs) < 2 or None in designs:
        why = "one core design: not a hybrid CPU" if len(designs) == 1 else MISSING
        return unknown(why, SRC), unknown(why, SRC)
    if cut:
        why = "the text is cut off: the cores of each kind cannot be counted"
        return unknown(why, SRC), unknown(why, SRC)
    little = sum(1 for _, name, _ in cores if name and _LITTLE.match(name))
    if little == 0 or little == len(cores):
        why = "no little (efficiency) core design among " + ", ".join(sorted(map(str, designs)))
        return unknown(why, SRC), unknown(why, SRC)
    return fact(len(cores) - little, SRC), fact(little, SRC)


def _near(sample: Sample) -> str | None:
    if _PROCESSOR.search(sample.head) and not _ENTRY.search(sample.head):
        return "looks like /proc/cpuinfo but has no model, flags or CPU part lines"
    return None


FORMAT = Format(
    name="/proc/cpuinfo",
    source=SRC,
    sniff=lambda sample: looks_like_proc_cpuinfo(sample.head),
    parse=lambda sample: parse_proc_cpuinfo_text(sample.text),
    rank=80,
    near=_near,
    example="cat /proc/cpuinfo",
)
