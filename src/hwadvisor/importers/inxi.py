"""``inxi -G`` (and the Graphics section of ``inxi -F``, ``-Fxz``, ``-b``): one ``Device-N:``
item per display device, with its ``vendor:``, ``driver: nvidia v: 535.104.05``, ``bus-ID:`` and,
with ``-x`` or more, ``chip-ID: 10de:2191``; inxi 2.x wrote ``Card:`` / ``Card-1:``.

The section runs from ``Graphics:`` to the next top-level section (``Audio:``, ``Network:``);
``Display:``, ``OpenGL:``, ``API:`` and monitor items inside it are left out. The device text
before the first key is lspci's description with inxi's shortening ("NVIDIA GP104 [GeForce GTX
1080]"). The driver version is the NVIDIA driver's where the driver is ``nvidia``.
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
    new_nvml,
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

SRC = Source.INXI
MISSING = "not in inxi output"

_SECTION = re.compile(r"(?m)^Graphics:")
_TOP = re.compile(r"^[A-Z][A-Za-z]+:(?:\s|$)")
_ITEM = re.compile(r"\b(Device-\d+|Card(?:-\d+)?):\s")
#: Items of the Graphics section that are not a device: they end a device's text.
_OTHER = re.compile(
    r"\s(?:Display|OpenGL|API|Monitor-\d+|Screen-\d+|Message|Info|EGL|Vulkan|Display ID|"
    r"Display Server|Renderer):\s"
)
#: The first key of a device item: the description ends there.
_FIRST_KEY = re.compile(r"\s(?:vendor|driver|bus[ -]ID|chip-ID|class-ID|arch|ports|v|pcie):\s")
_DRIVER = re.compile(r"\bdriver:\s+(\S+)(?:\s+v:\s+(\S+))?")
_CHIP = re.compile(r"\bchip-ID:\s+([0-9a-fA-F]{4}):([0-9a-fA-F]{4})")
_BUS = re.compile(r"\bbus[ -]ID:\s+((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
_NVIDIA_VERSION = re.compile(r"^\d{3}\.\d+(?:\.\d+)?$")


class InxiError(ImportFormatError):
    """The text holds no Graphics device item."""


def looks_like_inxi(sample: Sample) -> bool:
    """inxi's ``Graphics:`` section with a ``Device-1:`` or ``Card:`` item."""
    return (
        re.search(r"(?m)^Graphics:[ \t]*(?:\n[ \t]+)?(?:Device-\d+|Card(?:-\d+)?):", sample.head)
        is not None
    )


def _section(text: str) -> str:
    start = _SECTION.search(text)
    if start is None:
        return ""
    lines = text[start.end() :].splitlines()
    kept = [lines[0]] if lines else []
    for line in lines[1:]:
        if _TOP.match(line):
            break
        kept.append(line)
    return " " + " ".join(part.strip() for part in kept) + " "


def parse_inxi(sample: Sample) -> Imported:
    """Read inxi's Graphics section into GPUs.

    Raises :class:`InxiError` when the section holds no device item or none is a compute GPU.
    """
    section = _section(sample.text)
    starts = list(_ITEM.finditer(section))
    if not starts:
        raise InxiError("no 'Device-N:' item in the Graphics section")
    gpus: list[GpuInfo] = []
    notes: list[str] = []
    left_out: list[str] = []
    versions: list[str] = []
    for number, start in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else len(section)
        item = section[start.end() : end]
        other = _OTHER.search(" " + item)
        if other:
            item = item[: max(other.start() - 1, 0)]
        first = _FIRST_KEY.search(" " + item)
        description = (item[: max(first.start() - 1, 0)] if first else item).strip()
        chip = _CHIP.search(item)
        vid, did = (chip.group(1).lower(), chip.group(2).lower()) if chip else (None, None)
        vendor = (PCI_VENDORS.get(vid) if vid else None) or vendor_of(description)
        printed = product_name(description) or description or None
        named = name_device(
            len(gpus),
            vendor or "",
            printed,
            pci_id=f"{vid}:{did}" if vid and did else None,
            memory_bytes=None,
            source=SRC,
            tool="inxi",
        )
        if not is_compute_gpu(vendor, description, named.known):
            left_out.append(description or start.group(1))
            continue
        if named.note:
            notes.append(named.note)
        driver = _DRIVER.search(item)
        if driver and driver.group(1) == "nvidia" and driver.group(2):
            if _NVIDIA_VERSION.match(driver.group(2)):
                versions.append(driver.group(2))
        elif driver:
            notes.append(f"GPU {len(gpus)}: driver {driver.group(1)} (inxi)")
        bus = _BUS.search(item)
        bus_id = bus.group(1).lower() if bus else None
        if bus_id and bus_id.count(":") == 1:
            bus_id = f"0000:{bus_id}"
        gpus.append(
            new_gpu(
                len(gpus),
                vendor=vendor or "unknown",
                backend=BACKENDS.get(vendor or "", "unknown"),
                source=SRC,
                missing=MISSING,
                name=named.name,
                pci_bus_id=fact(bus_id, SRC, "inxi printed no bus ID (shown with -x)"),
            )
        )
    if not gpus:
        raise InxiError(
            f"no compute GPU among the display devices inxi lists "
            f"({'; '.join(left_out)}); if this "
            "machine has one, paste `inxi -Gxx` from it, or `nvidia-smi -q`"
        )
    gpus, too_many = cap_gpus(gpus)
    left = left_out_note(left_out, "inxi")
    if left:
        notes.append(left)
    notes.append("inxi states no GPU memory")
    sections: dict[str, object] = {"gpus": gpus}
    distinct = sorted(set(versions))
    if len(distinct) == 1:
        # The nvidia kernel module is loaded and says its version: the driver answered.
        sections["nvml"] = new_nvml(
            source=SRC,
            missing=MISSING,
            driver_version=fact(distinct[0], SRC),
            device_count=fact(sum(g.vendor == "nvidia" for g in gpus), SRC),
        )
    return Imported(empty_profile(**sections), truncated=too_many, notes=notes)


FORMAT = Format(
    name="inxi -G",
    source=SRC,
    sniff=looks_like_inxi,
    parse=parse_inxi,
    rank=30,
    example="inxi -Gxx",
)
