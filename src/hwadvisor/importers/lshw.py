"""``lshw -C display`` (``lshw -c video``, or the display nodes of a whole ``lshw``): one
``*-display`` node per display controller, with ``description:``, ``product:``, ``vendor:``,
``bus info: pci@0000:01:00.0`` and ``configuration: driver=nvidia latency=0`` lines.

``-numeric`` adds the ids (``product: GA100 [A100 SXM4 40GB] [10DE:20B0]``). A node marked
``UNCLAIMED`` has no driver bound. lshw states no GPU memory and no driver version.
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
    PCI_VENDORS,
    is_compute_gpu,
    left_out_note,
    name_device,
    product_name,
    vendor_of,
)
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuInfo

SRC = Source.LSHW
MISSING = "not in lshw output"

_NODE = re.compile(r"^(?P<indent>\s*)\*-(?P<kind>[\w:.-]+)(?P<rest>.*)$")
_KEY = re.compile(r"^\s+(description|product|vendor|bus info|configuration|resources):\s*(.*)$")
_NUMERIC = re.compile(r"\[([0-9a-fA-F]{4})(?::([0-9a-fA-F]{4}))?\]\s*$")


class LshwError(ImportFormatError):
    """The text holds no display node."""


def looks_like_lshw(sample: Sample) -> bool:
    """A ``*-display`` node followed by lshw's ``description:`` or ``product:`` lines."""
    return (
        re.search(r"(?m)^\s*\*-display\b", sample.head) is not None
        and re.search(r"(?m)^\s+(?:description|product):\s", sample.head) is not None
    )


def _nodes(lines: list[str]) -> list[tuple[bool, dict[str, str], int]]:
    """(unclaimed, keys, line index of the node's last line) of each display node."""
    nodes: list[tuple[bool, dict[str, str], int]] = []
    current: dict[str, str] | None = None
    unclaimed = False
    for number, line in enumerate(lines):
        node = _NODE.match(line)
        if node:
            if current is not None:
                nodes.append((unclaimed, current, number - 1))
            if node.group("kind").split(":")[0] == "display":
                current, unclaimed = {}, "UNCLAIMED" in node.group("rest")
            else:
                current = None
            continue
        key = _KEY.match(line)
        if current is not None and key:
            current.setdefault(key.group(1), key.group(2).strip())
    if current is not None:
        nodes.append((unclaimed, current, len(lines) - 1))
    return nodes


def parse_lshw(sample: Sample) -> Imported:
    """Read lshw's display nodes into GPUs.

    Raises :class:`LshwError` when no display node is in the text or none is a compute GPU.
    """
    lines = sample.text.splitlines()
    nodes = _nodes(lines)
    if not nodes:
        raise LshwError("no '*-display' node")
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    drivers: list[str] = []
    for unclaimed, keys, _ in nodes:
        product = keys.get("product", "")
        vendor_text = keys.get("vendor", "")
        ids = _NUMERIC.search(product)
        vid_match = _NUMERIC.search(vendor_text)
        vid = ids.group(1) if ids and ids.group(2) else vid_match.group(1) if vid_match else None
        did = ids.group(2) if ids and ids.group(2) else None
        vendor = PCI_VENDORS.get(vid.lower()) if vid else None
        vendor = vendor or vendor_of(f"{vendor_text} {product}")
        bare = _NUMERIC.sub("", product).strip()
        # A product cut off inside its bracket: "GP107M [GeForce GTX 1050 Ti Mobile".
        printed = product_name(bare) or (bare.split("[", 1)[1] if "[" in bare else bare) or None
        pci_id = f"{vid.lower()}:{did.lower()}" if vid and did else None
        named = name_device(
            len(gpus),
            vendor or "",
            printed,
            pci_id=pci_id,
            memory_bytes=None,
            source=SRC,
            tool="lshw",
        )
        if not is_compute_gpu(vendor, f"{vendor_text} {product}", named.known):
            left_out.append(printed or keys.get("description", "display"))
            continue
        if named.note:
            notes.append(named.note)
        driver = re.search(r"\bdriver=(\S+)", keys.get("configuration", ""))
        if driver:
            drivers.append(driver.group(1))
        if unclaimed:
            notes.append(f"GPU {len(gpus)}: UNCLAIMED (no driver bound to it when lshw ran)")
        bus = re.search(r"pci@([0-9a-fA-F:.]+)", keys.get("bus info", ""))
        gpus.append(
            new_gpu(
                len(gpus),
                vendor=vendor or "unknown",
                backend=BACKENDS.get(vendor or "", "unknown"),
                source=SRC,
                missing=MISSING,
                name=named.name,
                pci_bus_id=fact(bus.group(1).lower() if bus else None, SRC, "lshw printed no bus"),
            )
        )
    if not gpus:
        raise LshwError(
            f"no compute GPU among the display devices lshw lists "
            f"({'; '.join(left_out)}); if this "
            "machine has one, paste `sudo lshw -C display` from it, or `nvidia-smi -q`"
        )
    gpus, too_many = cap_gpus(gpus)
    if drivers:
        notes.append(f"kernel driver: {', '.join(dict.fromkeys(drivers))} (lshw configuration)")
    left = left_out_note(left_out, "lshw")
    if left:
        notes.append(left)
    notes.append("lshw states no GPU memory or driver version")
    return Imported(empty_profile(gpus=gpus), truncated=too_many or _cut(nodes, lines), notes=notes)


def _cut(nodes: list[tuple[bool, dict[str, str], int]], lines: list[str]) -> str | None:
    """A display node that ends the text before its ``configuration:``/``resources:`` lines."""
    _, keys, end = nodes[-1]
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    if end >= last and "configuration" not in keys and "resources" not in keys:
        shown = keys.get("product") or keys.get("description") or "display"
        return f"the text ends inside the display node of {shown!r}"
    return None


FORMAT = Format(
    name="lshw -C display",
    source=SRC,
    sniff=looks_like_lshw,
    parse=parse_lshw,
    rank=30,
    example="sudo lshw -C display",
)
