"""The system board as the firmware describes it: DMI/SMBIOS vendor, product, serial and BIOS.

Linux exposes the SMBIOS strings in ``/sys/class/dmi/id``; ``product_serial`` is readable by
root only. Firmware often leaves the strings at the board maker's placeholders ("To Be Filled By
O.E.M.", "Default string"): those are no value, and say so. Boards without SMBIOS (most ARM boards,
Jetson) name themselves in the device tree instead; macOS gives ``hw.model``.
"""

from __future__ import annotations

import platform
import re
from datetime import date
from pathlib import Path

from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import SystemInfo

from .cpu import read_sysctl
from .roots import Roots
from .sysfs import Reader, read_attribute, why_unreadable

_LIVE_ROOTS = Roots()

#: SystemInfo field → the file in ``/sys/class/dmi/id``.
DMI_FILES = {
    "vendor": "sys_vendor",
    "product": "product_name",
    "serial": "product_serial",
    "bios_vendor": "bios_vendor",
    "bios_version": "bios_version",
    "bios_date": "bios_date",
}

#: What firmware writes where the board maker filled in nothing (compared case-insensitively,
#: surrounding blanks and dots ignored).
PLACEHOLDERS = frozenset(
    {
        "",
        "to be filled by o.e.m",
        "default string",
        "system product name",
        "system manufacturer",
        "system serial number",
        "system version",
        "not specified",
        "not applicable",
        "not available",
        "0123456789",
        "123456789",
        "none",
        "n/a",
        "na",
        "o.e.m",
        "oem",
        "invalid",
        "unknown",
        "type1productconfigid",
        "chassis serial number",
        "base board serial number",
    }
)

#: A serial made of one repeated character ("0000000000", "XXXXXXXX", "........").
_REPEATED = re.compile(r"^(.)\1{3,}$")

_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")


def placeholder(value: str) -> bool:
    """Whether ``value`` is a string firmware writes instead of a real one."""
    text = " ".join(value.split()).strip(" .").lower()
    return text in PLACEHOLDERS or bool(_REPEATED.match(text.replace(" ", "")))


def iso_date(value: str) -> str | None:
    """SMBIOS's ``mm/dd/yyyy`` as ``yyyy-mm-dd``; None for anything else (a two-digit year is
    19yy by the specification and often 20yy in practice: such a date is kept as written)."""
    match = _DATE.match(value.strip())
    if match is None:
        return None
    month, day, year = (int(part) for part in match.groups())
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _dmi_fact(base: Path, name: str, read: Reader) -> Fact[str]:
    try:
        text = read(base / name)
    except OSError as exc:
        return unknown(why_unreadable(exc, f"/sys/class/dmi/id/{name}"), Source.SYSFS)
    if placeholder(text):
        shown = f" {text!r}" if text.strip() else " (empty)"
        return unknown(f"firmware placeholder{shown}: the board maker left it unset", Source.SYSFS)
    if name == "bios_date":
        return fact(iso_date(text) or text, Source.SYSFS)
    return fact(text, Source.SYSFS)


def _device_tree_model(roots: Roots, read: Reader) -> str | None:
    for path in (
        roots.sys / "firmware" / "devicetree" / "base" / "model",
        roots.proc / "device-tree" / "model",
    ):
        try:
            text = read(path)
        except OSError:
            continue
        if text and not placeholder(text):
            return text
    return None


def probe_dmi(
    roots: Roots = _LIVE_ROOTS, system: str | None = None, read: Reader = read_attribute
) -> SystemInfo:
    """Vendor, product, serial and BIOS of this machine; each fact null with its reason."""
    system = system or platform.system()
    if system == "Darwin":
        return _macos()
    if system != "Linux":
        why = f"DMI is read on Linux and macOS only, not on {system}"
        return SystemInfo(**{name: unknown(why, Source.PLATFORM) for name in DMI_FILES})
    base = roots.sys / "class" / "dmi" / "id"
    if not base.is_dir():
        why = "no /sys/class/dmi/id (no SMBIOS tables: an ARM board, or a sandbox that hides them)"
        fields: dict[str, Fact[str]] = {name: unknown(why, Source.SYSFS) for name in DMI_FILES}
        model = _device_tree_model(roots, read)
        if model is not None:
            fields["product"] = fact(model, Source.SYSFS)
        return SystemInfo(**fields)
    return SystemInfo(**{name: _dmi_fact(base, file, read) for name, file in DMI_FILES.items()})


def _macos() -> SystemInfo:
    model = read_sysctl("hw.model").get("hw.model") or None
    why = "not read on macOS (System Information shows it)"
    return SystemInfo(
        vendor=fact("Apple", Source.PLATFORM),
        product=fact(model, Source.SYSCTL, "sysctl hw.model gave no answer"),
        serial=unknown(why, Source.SYSCTL),
        bios_vendor=unknown(why, Source.SYSCTL),
        bios_version=unknown(why, Source.SYSCTL),
        bios_date=unknown(why, Source.SYSCTL),
    )
