"""``nvidia-smi -L``: one line per GPU, its full name and UUID, and its MIG devices under it.

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-7fdaf0a5-...)
      MIG 1g.10gb     Device  0: (UUID: MIG-feb88891-...)

A MIG device is a slice of the GPU above it: it becomes one of that GPU's ``mig_instances``
(never a GPU, and its memory is never the card's), and the GPU's ``mig_enabled`` is true. The
plain ``nvidia-smi`` table truncates long names and shows no UUIDs, so a paste holding both is
read by the table importer with these lines' help (:func:`read_list`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwadvisor.importers.base import (
    MAX_MIG,
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    empty_profile,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import GpuInfo, MigInstance

SRC = Source.NVIDIA_SMI
MISSING = "not in nvidia-smi -L"

_GPU_LINE = re.compile(r"^\s*GPU (\d+): (.+)$")
_MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+):\s*(.*)$")
_UUID = re.compile(r"\(UUID: ([^)]*)(\))?")
#: What -L prints for a GPU, for the sniffer: the UUID on the same line.
_SNIFF = re.compile(r"(?m)^[ \t]*GPU \d+: .+\(UUID: (?:GPU-|\[)")
_NO_MIG = "nvidia-smi -L lists no MIG device under it (MIG off, or on with none created)"


class NvidiaSmiListError(ImportFormatError):
    """The text holds no ``nvidia-smi -L`` line."""


@dataclass
class _Mig:
    profile: str
    device: int
    uuid: str | None


@dataclass
class _Gpu:
    index: int
    name: str
    uuid: str | None
    migs: list[_Mig] = field(default_factory=list)


@dataclass
class Listing:
    """What ``nvidia-smi -L`` lines say, and whether they are cut."""

    gpus: list[GpuInfo]
    truncated: str | None = None
    notes: list[str] = field(default_factory=list)


def looks_like_nvidia_smi_list(text: str) -> bool:
    """A ``GPU n: <name> (UUID: ...)`` line at the start of a line."""
    return _SNIFF.search(text) is not None


def _uuid(raw: str | None, prefix: str) -> Fact[str]:
    if raw is None:
        return unknown("the line is cut before the UUID's end", SRC)
    if re.fullmatch(rf"{prefix}-[0-9A-Za-z/-]+", raw.strip()):
        return fact(raw.strip(), SRC)
    return unknown(f"nvidia-smi -L shows {raw.strip()!r} for the UUID", SRC)


def read_list(text: str) -> Listing:
    """Every ``nvidia-smi -L`` GPU line in ``text`` with the MIG lines under it, as GPU records
    (only name, UUID and MIG facts known), and whether the list is visibly cut."""
    entries: list[_Gpu] = []
    truncated: str | None = None
    orphans = 0
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, raw in enumerate(lines):
        line = raw.rstrip()
        gpu = _GPU_LINE.match(line)
        if gpu is not None:
            rest = gpu.group(2)
            uuid = _UUID.search(rest)
            name = rest[: uuid.start()].strip() if uuid else rest.strip()
            if uuid is None or uuid.group(2) is None:
                if number != last:
                    continue  # "GPU 0: ..." without a UUID: not a -L line (collect_env prints them)
                truncated = f"the line of GPU {gpu.group(1)} is cut"
            whole = uuid.group(1) if uuid and uuid.group(2) else None
            entries.append(_Gpu(int(gpu.group(1)), name, whole))
            continue
        mig = _MIG_LINE.match(line)
        if mig is not None:
            uuid = _UUID.search(mig.group(3))
            if uuid is None or uuid.group(2) is None:
                truncated = f"the line of MIG device {mig.group(2)} is cut"
            whole = uuid.group(1) if uuid and uuid.group(2) else None
            item = _Mig(mig.group(1), int(mig.group(2)), whole)
            if not entries:
                orphans += 1
            elif len(entries[-1].migs) < MAX_MIG:
                entries[-1].migs.append(item)
            else:
                truncated = (
                    f"more MIG devices under one GPU than MIG makes: the first {MAX_MIG} are read"
                )
    notes = []
    if orphans:
        notes.append(f"{orphans} MIG device line(s) before any GPU line were left out")
    if entries and truncated is None and entries[0].index != 0:
        truncated = f"the list starts at GPU {entries[0].index}"
    entries, too_many = cap_gpus(entries)
    truncated = too_many or truncated
    return Listing([_gpu_info(entry) for entry in entries], truncated, notes)


def _gpu_info(entry: _Gpu) -> GpuInfo:
    migs = [
        MigInstance(
            index=mig.device,
            uuid=_uuid(mig.uuid, "MIG"),
            # NVML names it after its GPU and profile: "NVIDIA A100-SXM4-80GB MIG 1g.10gb".
            name=fact(f"{entry.name} MIG {mig.profile}", SRC),
            memory_total_bytes=unknown("nvidia-smi -L names the MIG profile, not its memory", SRC),
            gpu_instance_id=unknown(MISSING, SRC),
            compute_instance_id=unknown(MISSING, SRC),
            multiprocessor_count=unknown(MISSING, SRC),
        )
        for mig in entry.migs
    ]
    return new_gpu(
        entry.index,
        vendor="nvidia",
        backend="cuda",
        source=SRC,
        missing=MISSING,
        name=fact(entry.name, SRC),
        uuid=_uuid(entry.uuid, "GPU"),
        mig_enabled=fact(True, SRC) if migs else unknown(_NO_MIG, SRC),
        mig_instances=migs,
    )


def parse_nvidia_smi_list(text: str) -> Imported:
    """Read ``nvidia-smi -L``. Raises :class:`NvidiaSmiListError` when no GPU line is found."""
    listing = read_list(text)
    if not listing.gpus:
        raise NvidiaSmiListError("no 'GPU n: <name> (UUID: ...)' line")
    count: Fact[int] = (
        unknown("the list is cut off", SRC) if listing.truncated else fact(len(listing.gpus), SRC)
    )
    nvml = new_nvml(source=SRC, missing=MISSING, device_count=count)
    return Imported(
        empty_profile(nvml=nvml, gpus=listing.gpus),
        truncated=listing.truncated,
        notes=listing.notes,
    )


def _near(sample: Sample) -> str | None:
    if re.search(r"(?m)^\s+MIG \S+\s+Device\s+\d+: \(UUID:", sample.head):
        return "looks like nvidia-smi -L but has only MIG device lines, no 'GPU n: ...' line"
    return None


FORMAT = Format(
    name="nvidia-smi -L",
    source=SRC,
    sniff=lambda sample: looks_like_nvidia_smi_list(sample.head),
    parse=lambda sample: parse_nvidia_smi_list(sample.text),
    rank=80,
    near=_near,
    example="nvidia-smi -L",
)
