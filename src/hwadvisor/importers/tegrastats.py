"""``tegrastats`` (NVIDIA Jetson): one line of counters per interval::

    04-11-2025 10:36:27 RAM 4321/62801MB (lfb 1759x4MB) SWAP 19/31400MB (cached 0MB)
    CPU [0%@729,0%@729,...] EMC_FREQ 0%@2133 GR3D_FREQ 0%@[0,0] ... tj@44.343C VDD_GPU_SOC ...

It names no module. The memory Linux sees (``RAM used/total``) and the number of CPU cores tell
the Jetson modules apart where only one fits (an AGX Orin 64GB: 12 cores, about 61 GiB);
``GR3D_FREQ`` with a ``[...]`` list and Orin's power rails say the module is an Orin. Where
several modules fit, the import says so and asks for ``jetson_release``. The GPU shares the
module's memory: its memory is the RAM total.
"""

from __future__ import annotations

import re

from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    empty_profile,
    new_cpu,
    new_gpu,
)
from hwadvisor.importers.jetson import modules_for
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Fact, Source, fact
from hwadvisor.model.profile import MemoryInfo

SRC = Source.TEGRASTATS
MISSING = "not in tegrastats output"

_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB\b")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB\b")
_CPU = re.compile(r"\bCPU \[([^\]]*)\]")
_GR3D = re.compile(r"\bGR3D_FREQ (\d+)%")
_ORIN = re.compile(r"GR3D_FREQ \d+%@\[|\bVDD_GPU_SOC\b|\bVDD_CPU_CV\b|\bVIN_SYS_5V0\b")
#: The last field of a whole line: a power rail's ``cur/avg`` (``301mW/301mW``, ``38/38``).
_WHOLE = re.compile(r"\d+(?:mW)?/\d+(?:mW)?\s*$")


class TegrastatsError(ImportFormatError):
    """The text holds no tegrastats line, or one that does not say which Jetson it is."""


def looks_like_tegrastats(sample: Sample) -> bool:
    """A ``RAM a/bMB`` counter beside ``CPU [...]`` or ``GR3D_FREQ``."""
    head = sample.head
    return _RAM.search(head) is not None and (_CPU.search(head) is not None or "GR3D_FREQ" in head)


def parse_tegrastats(sample: Sample) -> Imported:
    """Read the first tegrastats line: the module it fits, its memory and GPU load.

    Raises :class:`TegrastatsError` when no line has the RAM counter, or when its memory and
    CPU cores fit no module or several.
    """
    lines = [line.strip() for line in sample.text.splitlines() if _RAM.search(line)]
    if not lines:
        raise TegrastatsError("no 'RAM used/totalMB' counter")
    whole = [line for line in lines if _WHOLE.search(line)]
    line = whole[0] if whole else lines[0]
    ram = _RAM.search(line)
    if ram is None:  # every kept line has the counter
        raise TegrastatsError("no 'RAM used/totalMB' counter")
    total_mib = int(ram.group(2))
    cpu = _CPU.search(line)
    cpus = len(cpu.group(1).split(",")) if cpu else 0
    orin = True if _ORIN.search(line) else None
    gib = total_mib / 1024
    fits = modules_for(gib, cpus, orin) if cpus else []
    names = sorted({m.name for m in fits})
    said = f"a Jetson with {total_mib} MB of memory and {cpus or 'an unknown number of'} CPU cores"
    ask = "paste `jetson_release` (or `cat /proc/device-tree/model`) from it to name the module"
    if not names:
        raise TegrastatsError(
            f"tegrastats from {said}, which fits no Jetson module hwadvisor knows; {ask}"
        )
    if len(names) > 1:
        raise TegrastatsError(
            f"tegrastats from {said} names no module, and several fit ({', '.join(names)}); {ask}"
        )
    notes = [
        f"GPU 0: named from tegrastats' memory ({gib:.1f} GiB) and {cpus} CPU cores; "
        "tegrastats names no module",
        "the GPU shares the module's memory with the CPU",
    ]
    if len(lines) > 1:
        notes.append(f"{len(lines)} tegrastats samples; the first whole one is read")
    busy = _GR3D.search(line)
    memory_bytes = total_mib * 2**20
    gpu = new_gpu(
        0,
        vendor="nvidia",
        backend="cuda",
        source=SRC,
        missing=MISSING,
        name=Fact(value=names[0], source=Source.CATALOG),
        vram_total_bytes=fact(memory_bytes, SRC),
        vram_used_bytes=fact(int(ram.group(1)) * 2**20, SRC),
        utilization_percent=fact(int(busy.group(1)) if busy else None, SRC, "no GR3D_FREQ"),
    )
    swap = _SWAP.search(line)
    memory = MemoryInfo(
        total_bytes=fact(memory_bytes, SRC),
        swap_total_bytes=fact(int(swap.group(2)) * 2**20 if swap else None, SRC, MISSING),
    )
    cut = None
    last = lines[-1]
    if not _WHOLE.search(last):
        cut = f"the last tegrastats line is cut off ({last[-30:]!r})"
    cpu_info = new_cpu(source=SRC, missing=MISSING, logical_cores=fact(cpus, SRC))
    return Imported(
        empty_profile(gpus=[gpu], memory=memory, cpu=cpu_info), truncated=cut, notes=notes
    )


FORMAT = Format(
    name="tegrastats",
    source=SRC,
    sniff=looks_like_tegrastats,
    parse=parse_tegrastats,
    rank=50,
    example="tegrastats",
)
