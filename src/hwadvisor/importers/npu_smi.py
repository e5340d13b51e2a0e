"""``npu-smi info`` (Huawei Ascend): NPUs, which hwadvisor does not model.

The table has two rows per chip (columns shortened here)::

    | NPU   Name         | Health       | Power(W)  Temp(C)          Hugepages-Usage(page)|
    | Chip  Phy-ID       | Bus-Id       | AICore(%) Memory-Usage(MB) HBM-Usage(MB)        |
    | 0     Ascend910    | OK           | 163.6     30               0    / 0             |
    | 0     0            | 0000:9D:00.0 | 0         0    / 0         3180 / 65536         |

The import lists no GPU: it says how many Ascend chips the machine has, of which model and with
how much HBM (or device memory), as the ``accelerator-not-modelled`` finding.
"""

from __future__ import annotations

import re

from hwadvisor.importers.base import Imported, ImportFormatError, Sample, empty_profile
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source

SRC = Source.NPU_SMI

_SNIFF = re.compile(r"(?m)^\|\s*NPU\s+Name\s*\|\s*Health\s*\|")
_VERSION = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_FIRST = re.compile(r"^\|\s*(\d+)\s+(\S[^|]*?)\s*\|\s*(\w[^|]*?)\s*\|")
_SECOND = re.compile(r"^\|\s*(\d+)(?:\s+(\d+))?\s*\|\s*([0-9A-Fa-fx:.]+)\s*\|(.*?)\|?\s*$")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")


class NpuSmiError(ImportFormatError):
    """The text holds no NPU row."""


def looks_like_npu_smi(sample: Sample) -> bool:
    """npu-smi's ``| NPU  Name | Health |`` header."""
    return _SNIFF.search(sample.head) is not None


def parse_npu_smi(sample: Sample) -> Imported:
    """Read ``npu-smi info``: the chips, their model and memory, as an unmodelled accelerator.

    Raises :class:`NpuSmiError` when no NPU row is in the text.
    """
    lines = sample.text.splitlines()
    header = next((n for n, line in enumerate(lines) if _SNIFF.search(line)), 0)
    hbm = any("HBM-Usage" in line for line in lines[header : header + 3])
    chips: list[tuple[str, str, int | None]] = []  # (npu, name, memory MiB)
    pending: tuple[str, str] | None = None
    cut: str | None = None
    for line in lines[header + 2 :]:
        if re.match(r"^\|\s*NPU\s+Chip\b", line) or "Process id" in line:
            break  # the process table
        second = _SECOND.match(line)
        if pending is not None and second:
            pairs = _PAIR.findall(second.group(4))
            memory = int(pairs[-1][1]) if pairs else None
            chips.append((pending[0], pending[1], memory))
            pending = None
            continue
        first = _FIRST.match(line)
        if first:
            pending = (first.group(1), first.group(2).strip())
    if pending is not None:
        cut = f"the text ends inside the rows of NPU {pending[0]}"
        chips.append((pending[0], pending[1], None))
    if not chips:
        raise NpuSmiError("no NPU row under the '| NPU  Name | Health |' header")
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    if cut is None and not last.startswith("+"):
        cut = f"the text ends after NPU {chips[-1][0]}, before the table's closing border"
    names = sorted({name for _, name, _ in chips})
    memories = sorted({m for _, _, m in chips if m})
    npus = len({npu for npu, _, _ in chips})
    kind = "HBM" if hbm else "device memory"
    memory_text = (
        f", {' or '.join(f'{m / 1024:g} GiB' for m in memories)} {kind} per chip"
        if memories
        else ""
    )
    model = " / ".join(f"Ascend {n}" if not n.lower().startswith("ascend") else n for n in names)
    chip_word = "chip" if len(chips) == 1 else "chips"
    unmodelled = (
        f"npu-smi lists {len(chips)} Huawei {model} NPU {chip_word} on {npus} NPU(s){memory_text}"
    )
    notes = []
    version = _VERSION.search(sample.head)
    if version:
        notes.append(f"npu-smi {version.group(1)}, driver version {version.group(2)}")
    return Imported(empty_profile(), truncated=cut, unmodelled=unmodelled, notes=notes)


FORMAT = Format(
    name="npu-smi info",
    source=SRC,
    sniff=looks_like_npu_smi,
    parse=parse_npu_smi,
    rank=80,
    example="npu-smi info",
)
