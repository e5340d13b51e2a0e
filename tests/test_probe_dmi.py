"""The DMI probe on recorded ``/sys/class/dmi/id`` trees: servers, a laptop, a VM, boards left
at their placeholders, a serial only root may read, and boards without SMBIOS."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hwadvisor.model.facts import Source
from hwadvisor.model.profile import Profile, SystemInfo, ToolInfo
from hwadvisor.probes import dmi
from hwadvisor.probes.dmi import iso_date, placeholder, probe_dmi
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.sysfs import read_attribute
from hwadvisor.render.console import render_summary
from hwadvisor.render.html import render_html
from hwadvisor.render.summaries import system_line
from tests.helpers import sysfs_tree

FIELDS = ("vendor", "product", "serial", "bios_vendor", "bios_version", "bios_date")


def scan(name: str, tmp_path: Path) -> SystemInfo:
    tree = sysfs_tree.build(name, tmp_path)
    return probe_dmi(Roots.under(tree), system="Linux", read=sysfs_tree.reader(name, tree))


def values(info: SystemInfo) -> dict[str, Any]:
    return {name: getattr(info, name).value for name in FIELDS}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "dmi-supermicro-server",
            {
                "vendor": "Supermicro",
                "product": "SYS-421GE-TNRT",
                "serial": "S452187X3B20417",
                "bios_vendor": "American Megatrends International, LLC.",
                "bios_version": "2.1",
                "bios_date": "2023-03-15",
            },
        ),
        (
            "dmi-dell-server",
            {
                "vendor": "Dell Inc.",
                "product": "PowerEdge XE9680",
                "serial": "7XQ2PL3",
                "bios_vendor": "Dell Inc.",
                "bios_version": "1.6.8",
                "bios_date": "2024-01-22",
            },
        ),
        (
            "dmi-lenovo-laptop",
            {
                "vendor": "LENOVO",
                "product": "21CBCTO1WW",
                "serial": "PF3K7ZQW",
                "bios_vendor": "LENOVO",
                # Lenovo pads the version inside the parentheses: kept as the firmware wrote it.
                "bios_version": "N3AET74W (1.39 )",
                "bios_date": "2023-09-20",
            },
        ),
        (
            "dmi-qemu-vm",
            {
                "vendor": "QEMU",
                "product": "Standard PC (Q35 + ICH9, 2009)",
                "serial": None,  # QEMU sets no serial unless told to
                "bios_vendor": "SeaBIOS",
                "bios_version": "1.16.3-debian-1.16.3-2",
                "bios_date": "2014-04-01",
            },
        ),
    ],
)
def test_recorded_machines(name: str, expected: dict[str, Any], tmp_path: Path) -> None:
    info = scan(name, tmp_path)
    assert values(info) == expected
    for field in FIELDS:
        f = getattr(info, field)
        assert f.source == Source.SYSFS
        assert (f.reason is None) == (f.value is not None), field


def test_empty_serial_says_it_is_a_placeholder(tmp_path: Path) -> None:
    info = scan("dmi-qemu-vm", tmp_path)
    assert info.serial.reason == "firmware placeholder (empty): the board maker left it unset"


@pytest.mark.parametrize(
    ("name", "placeholders", "kept"),
    [
        (
            "dmi-placeholder-board",
            {
                "vendor": "System manufacturer",
                "product": "System Product Name",
                "serial": "System Serial Number",
            },
            {"bios_version": "1601", "bios_date": "2023-04-25"},
        ),
        (
            "dmi-asrock-oem",
            {
                "vendor": "To Be Filled By O.E.M.",
                "product": "To Be Filled By O.E.M.",
                "serial": "To Be Filled By O.E.M.",
            },
            {"bios_version": "P2.10", "bios_vendor": "American Megatrends Inc."},
        ),
    ],
)
def test_placeholder_boards(
    name: str, placeholders: dict[str, str], kept: dict[str, str], tmp_path: Path
) -> None:
    info = scan(name, tmp_path)
    for field, text in placeholders.items():
        f = getattr(info, field)
        assert f.value is None, field
        assert f.reason == f"firmware placeholder {text!r}: the board maker left it unset"
    for field, value in kept.items():
        assert getattr(info, field).value == value


@pytest.mark.parametrize(
    "text",
    [
        "To Be Filled By O.E.M.",
        "to be filled by o.e.m",
        "Default string",
        "System Product Name",
        "Not Specified",
        "0123456789",
        "None",
        "",
        "   ",
        "0000000000",
        "XXXXXXXXXX",
        "O.E.M.",
    ],
)
def test_placeholder_strings(text: str) -> None:
    assert placeholder(text)


@pytest.mark.parametrize(
    "text",
    ["Supermicro", "Standard PC (Q35 + ICH9, 2009)", "7XQ2PL3", "1.0", "Default", "0123", "A1"],
)
def test_real_strings_are_kept(text: str) -> None:
    assert not placeholder(text)


def test_serial_readable_by_root_only(tmp_path: Path) -> None:
    info = scan("dmi-serial-root-only", tmp_path)
    assert info.serial.value is None
    assert info.serial.reason == "readable by root only"
    # The other files are world-readable: one refused file hides nothing else.
    assert info.product.value == "AS -4125GS-TNRT"
    assert info.bios_version.value == "1.5a"
    assert info.bios_date.value == "2023-08-02"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_serial_mode_0400_for_a_user(tmp_path: Path) -> None:
    tree = sysfs_tree.build("dmi-supermicro-server", tmp_path)
    (tree / "sys/class/dmi/id/product_serial").chmod(0)
    info = probe_dmi(Roots.under(tree), system="Linux")
    assert info.serial.reason == "readable by root only"
    assert info.vendor.value == "Supermicro"


def test_every_read_failing_keeps_each_reason(tmp_path: Path) -> None:
    tree = sysfs_tree.build("dmi-dell-server", tmp_path)

    def broken(path: Path) -> str:
        if path.name == "bios_date":
            raise OSError(errno.EIO, "Input/output error", str(path))
        if path.name == "sys_vendor":
            raise FileNotFoundError(errno.ENOENT, "No such file", str(path))
        return read_attribute(path)

    info = probe_dmi(Roots.under(tree), system="Linux", read=broken)
    assert info.bios_date.reason == "/sys/class/dmi/id/bios_date unreadable: Input/output error"
    assert info.vendor.reason == "no /sys/class/dmi/id/sys_vendor"
    assert info.product.value == "PowerEdge XE9680"


def test_no_dmi_and_no_device_tree(tmp_path: Path) -> None:
    info = probe_dmi(Roots.under(tmp_path), system="Linux")
    for field in FIELDS:
        f = getattr(info, field)
        assert f.value is None
        assert f.reason is not None and f.reason.startswith("no /sys/class/dmi/id")


def test_device_tree_names_a_board_without_smbios(tmp_path: Path) -> None:
    info = scan("dmi-jetson-devicetree", tmp_path)
    # The device tree's string ends in a NUL, which is not part of the name.
    assert info.product.value == "NVIDIA Jetson AGX Orin Developer Kit"
    assert info.vendor.value is None
    assert (
        info.bios_version.reason is not None and "no /sys/class/dmi/id" in info.bios_version.reason
    )


def test_a_fifo_in_place_of_an_attribute_does_not_hang(tmp_path: Path) -> None:
    tree = sysfs_tree.build("dmi-supermicro-server", tmp_path)
    target = tree / "sys/class/dmi/id/bios_version"
    target.unlink()
    os.mkfifo(target)
    info = probe_dmi(Roots.under(tree), system="Linux")
    assert info.bios_version.value is None
    assert info.bios_version.reason == (
        "/sys/class/dmi/id/bios_version unreadable: not a regular file"
    )
    assert info.bios_vendor.value == "American Megatrends International, LLC."


def test_macos_reads_hw_model(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, ...]] = []

    def sysctl(*names: str, **_kw: object) -> dict[str, str]:
        asked.append(names)
        return {"hw.model": "Mac14,6"}

    monkeypatch.setattr(dmi, "read_sysctl", sysctl)
    info = probe_dmi(system="Darwin")
    assert asked == [("hw.model",)]
    assert (info.vendor.value, info.product.value) == ("Apple", "Mac14,6")
    assert info.product.source == Source.SYSCTL
    assert info.serial.value is None and info.serial.reason


def test_macos_without_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmi, "read_sysctl", lambda *_a, **_k: {})
    info = probe_dmi(system="Darwin")
    assert info.product.value is None
    assert info.product.reason == "sysctl hw.model gave no answer"


def test_windows_says_why() -> None:
    info = probe_dmi(system="Windows")
    assert all(getattr(info, f).value is None for f in FIELDS)
    assert info.vendor.reason == "DMI is read on Linux and macOS only, not on Windows"


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("03/15/2023", "2023-03-15"),
        ("1/2/2020", "2020-01-02"),
        ("08/13/08", None),  # 19yy by the specification, 20yy in practice: not guessed
        ("2023-03-15", None),
        ("13/01/2020", None),
        ("02/30/2020", None),
    ],
)
def test_iso_date(raw: str, iso: str | None) -> None:
    assert iso_date(raw) == iso


def test_an_unparseable_bios_date_is_kept_as_written(tmp_path: Path) -> None:
    tree = sysfs_tree.build("dmi-dell-server", tmp_path)
    (tree / "sys/class/dmi/id/bios_date").write_text("2024.01.22\n")
    info = probe_dmi(Roots.under(tree), system="Linux")
    assert info.bios_date.value == "2024.01.22"


def test_this_machine_never_raises() -> None:
    info = probe_dmi()
    for field in FIELDS:
        f = getattr(info, field)
        assert f.value is not None or f.reason


# --------------------------------------------------------------------------------------------
# What the reports show


def test_system_line_in_the_terminal_and_the_html_report(tmp_path: Path) -> None:
    info = scan("dmi-supermicro-server", tmp_path)
    expected = (
        "Supermicro SYS-421GE-TNRT, BIOS American Megatrends International, LLC. 2.1 (2023-03-15)"
    )
    assert system_line(info) == expected
    profile = Profile(tool=ToolInfo(version="0"), created_utc="2026-11-21T10:00:00Z", system=info)
    out = io.StringIO()
    render_summary(profile, Console(file=out, width=200, color_system=None))
    assert any(
        row.strip().startswith("system") and expected in row for row in out.getvalue().splitlines()
    )
    html = render_html(profile, source_sha256="0" * 64)
    assert f"<tr><th>system</th><td>{expected}</td></tr>" in html
    # The serial is not on the line: it identifies the machine.
    assert "S452187X3B20417" not in out.getvalue()


def test_system_line_of_a_placeholder_board_keeps_the_bios(tmp_path: Path) -> None:
    assert system_line(scan("dmi-asrock-oem", tmp_path)) == (
        "BIOS American Megatrends Inc. P2.10 (2021-11-08)"
    )
    assert system_line(SystemInfo()) is None
