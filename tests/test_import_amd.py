"""AMD tools' output: ``rocm-smi`` (concise table, ``GPU[n] :`` fields, ``--csv``, ``--json``)
and ``amd-smi`` (``static`` / ``list``, text and ``--json``), read from real pastes; and how a
GPU the tool named badly ("0x738c", a board string, only a gfx target) gets its catalog name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.catalog import CatalogError, load_catalog
from hwadvisor.catalog.peaks import find_gpu_by_pci_id, find_gpu_by_target
from hwadvisor.errors import InputError
from hwadvisor.importers.base import Sample
from hwadvisor.importers.detect import detect_format, import_text, read_one
from hwadvisor.importers.rocm_smi import looks_like_rocm_smi, normalize_gfx_target
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import Profile

IMPORT = Path(__file__).parent / "fixtures" / "import"
GIB = 2**30
MIB = 2**20
ROCM = "rocm-smi output"
AMD = "amd-smi output"


def _load(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


def _import(name: str, kind: str) -> tuple[Profile, list[str], str | None]:
    """The profile of a fixture, the import's notes and why it looks cut off."""
    text = _load(name)
    assert detect_format(text) == kind
    _, read = read_one(text, name)
    return import_text(text, name), read.notes, read.truncated


def _names(profile: Profile) -> list[str | None]:
    return [gpu.name.value for gpu in profile.gpus]


# --------------------------------------------------------------------------------------------
# rocm-smi: the concise table


def test_old_concise_table_behind_a_log_prefix_8_gcds() -> None:
    profile, notes, cut = _import("rocm-smi-concise-8x-mi250x-log-prefix.txt", ROCM)
    assert [g.index for g in profile.gpus] == list(range(8))
    assert [g.temperature_c.value for g in profile.gpus] == [47, 46, 46, 46, 47, 46, 45, 39]
    assert [g.power_draw_watts.value for g in profile.gpus[:2]] == [91.0, None]
    # The first die of each card carries the 560 W cap; the second prints 0.0W: unknown.
    assert [g.power_limit_watts.value for g in profile.gpus[:2]] == [560.0, None]
    assert "0 W" in (profile.gpus[1].power_limit_watts.reason or "")
    assert profile.gpus[0].sm_clock_mhz.value == 800
    assert profile.gpus[0].memory_clock_mhz.value == 1600
    # The table names no model and prints no id: nothing is guessed.
    assert _names(profile) == [None] * 8
    assert all(g.vendor == "amd" and g.backend == "rocm" for g in profile.gpus)
    assert cut is None and notes == []


def test_rocm_2_table_with_overdrive_columns() -> None:
    profile, _, cut = _import("rocm-smi-concise-2x-vega10-rocm2.4.txt", ROCM)
    assert [(g.temperature_c.value, g.sm_clock_mhz.value) for g in profile.gpus] == [
        (31, 852),
        (26, 852),
    ]
    assert profile.gpus[0].memory_clock_mhz.value == 167
    assert profile.gpus[0].power_draw_watts.value is None  # "N/A"
    assert profile.gpus[0].utilization_percent.value is None  # GPU% "N/A", not "0%" of SCLK OD
    assert cut is None


def test_rocm_6_table_cut_in_a_row_names_the_gpus_by_their_pci_id() -> None:
    profile, notes, cut = _import("rocm-smi-concise-mi300x-spx-cut.txt", ROCM)
    assert len(profile.gpus) == 4  # rows 0-2 and the cut row 3
    assert cut == "the concise table ends inside GPU 3's row"
    assert _names(profile) == ["AMD Instinct MI300X"] * 4
    assert all(g.name.source is Source.CATALOG for g in profile.gpus)
    assert notes[0] == "GPU 0: named from its PCI id 1002:74a1 (rocm-smi printed no model name)"
    first, _, _, last = profile.gpus
    assert (first.temperature_c.value, first.power_draw_watts.value) == (48, 135.0)
    assert (first.power_limit_watts.value, first.sm_clock_mhz.value) == (750.0, 124)
    assert first.memory_clock_mhz.value == 900
    # The cut row keeps what was printed before the cut, and not the cut value ("900").
    assert (last.temperature_c.value, last.sm_clock_mhz.value) == (41, 129)
    assert last.memory_clock_mhz.value is None and last.power_limit_watts.value is None
    # The catalog fills memory and the gfx target of a GPU the table named by its id.
    assert first.vram_total_bytes.value == 192 * GIB
    assert first.vram_total_bytes.source is Source.CATALOG
    assert first.architecture.value == "gfx942"
    assert any(f.id == "input-truncated" for f in profile.findings)


def test_partitioned_mi350x_table_without_banner_cut_at_a_row_number() -> None:
    profile, _, cut = _import("rocm-smi-concise-mi350x-dpx-cut.txt", ROCM)
    # Nine rows were begun (DPX: two partitions per GPU); the ninth is cut at its number.
    assert [g.index for g in profile.gpus] == list(range(9))
    assert cut == "the concise table ends inside GPU 8's row"
    assert profile.gpus[0].power_limit_watts.value == 1000.0
    assert profile.gpus[0].sm_clock_mhz.value == 2203
    # The second partition prints N/A for everything.
    assert profile.gpus[1].temperature_c.value is None
    # 1002:75a0 (MI350X) has no catalog row: no name is made up.
    assert _names(profile) == [None] * 9
    assert "no model name" in (profile.gpus[0].name.reason or "")


def test_rocm_6_0_table_with_the_name_under_each_row() -> None:
    profile, notes, cut = _import("rocm-smi-concise-name-row-4x-mi300x.txt", ROCM)
    assert _names(profile) == ["AMD Instinct MI300X"] * 4
    assert all(g.name.source is Source.ROCM_SMI for g in profile.gpus)
    assert [g.temperature_c.value for g in profile.gpus] == [35, 37, 34, 38]
    assert [g.power_draw_watts.value for g in profile.gpus] == [133.0, 131.0, 131.0, 137.0]
    assert profile.gpus[0].catalog_name.value == "AMD Instinct MI300X"
    assert cut is None and notes == []


# --------------------------------------------------------------------------------------------
# rocm-smi: GPU[n] fields, CSV, JSON


def test_showallinfo_of_4_mi300x() -> None:
    profile, notes, cut = _import("rocm-smi-showallinfo-4x-mi300x.txt", ROCM)
    assert _names(profile) == ["AMD Instinct MI300X OAM"] * 4
    assert [g.catalog_name.value for g in profile.gpus] == ["AMD Instinct MI300X"] * 4
    assert notes == ["amdgpu driver version 6.7.0 (rocm-smi 'Driver version')"]
    first = profile.gpus[0]
    assert first.pci_bus_id.value == "0000:26:00.0"
    assert first.serial.value == "692347006052"
    assert first.uuid.value == "0x8d1457e2c20f59d2"
    assert first.temperature_c.value == 35  # junction: MI300X has no edge sensor
    assert (first.power_draw_watts.value, first.power_limit_watts.value) == (133.0, 750.0)
    assert first.sm_clock_mhz.value == 137  # "sclk clock level: S: (137Mhz)"
    assert first.utilization_percent.value == 0
    assert first.compute_capability.value is None
    assert cut is None


def test_allinfo_cut_after_the_clocks() -> None:
    profile, notes, cut = _import("rocm-smi-showallinfo-navi10-cut.txt", ROCM)
    (gpu,) = profile.gpus
    assert gpu.temperature_c.value == 67  # edge before junction (76)
    assert (gpu.sm_clock_mhz.value, gpu.memory_clock_mhz.value) == (2100, 100)
    # "GPU ID: 0x731f" (a Navi 10) is no catalog row: the name stays unknown.
    assert gpu.name.value is None
    assert notes == ["amdgpu driver version 5.6.19 (rocm-smi 'Driver version')"]
    assert cut == "the text stops before rocm-smi's 'End of ROCm SMI Log' line"


def test_showproductname_with_only_the_device_id_as_series() -> None:
    profile, notes, _ = _import("rocm-smi-showproductname-mi100-hex-series.txt", ROCM)
    (gpu,) = profile.gpus
    assert gpu.name.value == "AMD Instinct MI100"
    assert gpu.name.source is Source.CATALOG
    assert notes == ["GPU 0: named from its PCI id 1002:738c (rocm-smi printed '0x738c')"]
    assert gpu.architecture.value == "gfx908"
    assert gpu.vram_total_bytes.value == 32 * GIB


def test_showmeminfo_alone() -> None:
    profile, _, _ = _import("rocm-smi-showmeminfo-vram-4gb.txt", ROCM)
    (gpu,) = profile.gpus
    assert gpu.vram_total_bytes.value == 4278190080
    assert gpu.vram_used_bytes.value == 108814336
    assert gpu.vram_free_bytes.value == 4278190080 - 108814336
    assert gpu.vram_free_bytes.source is Source.DERIVED


def test_csv_driver_and_product_tables_in_one_paste() -> None:
    profile, notes, _ = _import("rocm-smi-csv-driver-productname-2x-mi100.txt", ROCM)
    assert _names(profile) == ["Arcturus GL-XL [AMD Instinct MI100]"] * 2
    assert [g.catalog_name.value for g in profile.gpus] == ["AMD Instinct MI100"] * 2
    assert notes == [
        "amdgpu driver version 4.18.0-348.12.2.el8_5.x86_64 (rocm-smi 'Driver version')"
    ]


@pytest.mark.parametrize("name", ["rocm-smi-csv-rx7900xt.txt", "rocm-smi-json-rx7900xt.json"])
def test_csv_and_json_of_one_rx_7900_xt(name: str) -> None:
    profile, notes, cut = _import(name, ROCM)
    (gpu,) = profile.gpus
    assert gpu.name.value == "Radeon RX 7900 XT"
    assert gpu.catalog_name.value == "AMD Radeon RX 7900 XT"
    assert gpu.vram_total_bytes.value == 21458059264
    assert gpu.vram_used_bytes.value == 27856896
    assert gpu.architecture.value == "gfx1100"
    assert gpu.utilization_percent.value == 0
    assert cut is None and notes == []


def test_csv_names_no_catalog_row_keeps_the_printed_names() -> None:
    profile, notes, _ = _import("rocm-smi-csv-rx6800-raphael.txt", ROCM)
    assert _names(profile) == ["Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", "Raphael"]
    # 1002:73bf is three cards: no row claims it, so nothing is renamed.
    assert [g.catalog_name.value for g in profile.gpus] == [None, None]
    assert [g.architecture.value for g in profile.gpus] == ["gfx1030", "gfx1036"]
    assert [g.vram_total_bytes.value for g in profile.gpus] == [17163091968, 67108864]
    # The poster masked the unique id: it is not taken for one.
    assert profile.gpus[0].uuid.value is None
    assert notes == []


def test_json_of_a_board_string_and_decimal_gfx_version() -> None:
    profile, notes, _ = _import("rocm-smi-json-mi250x-gfx9010.json", ROCM)
    (gpu,) = profile.gpus
    assert gpu.name.value == "AMD Instinct MI250X (one GCD)"
    assert gpu.name.source is Source.CATALOG
    assert notes == [
        "GPU 0: named from its PCI id 1002:7408 "
        "(rocm-smi printed 'AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2')"
    ]
    assert gpu.architecture.value == "gfx90a"  # printed "gfx9010"
    # One device is one die: 64 GB, never the card's 128 GB.
    assert gpu.vram_total_bytes.value == 64 * GIB


def test_json_with_only_ids_out_of_order() -> None:
    profile, notes, _ = _import("rocm-smi-json-4x-mi100-ids-only.json", ROCM)
    assert [g.index for g in profile.gpus] == [0, 1, 2, 3]
    assert _names(profile) == ["AMD Instinct MI100"] * 4
    assert [g.pci_bus_id.value for g in profile.gpus] == [
        "0000:63:00.0",
        "0000:43:00.0",
        "0000:26:00.0",
        "0000:03:00.0",
    ]
    assert profile.gpus[1].uuid.value == "0x6be2ee3b2b314cfc"
    assert len(notes) == 4


def test_json_cut_off_keeps_the_fields_before_the_cut() -> None:
    profile, _, cut = _import("rocm-smi-json-780m-allinfo-cut.json", ROCM)
    (gpu,) = profile.gpus
    assert gpu.name.value == "Phoenix3"
    assert gpu.pci_bus_id.value == "0000:c4:00.0"
    assert (gpu.temperature_c.value, gpu.power_draw_watts.value) == (31, 7.222)
    assert (gpu.sm_clock_mhz.value, gpu.utilization_percent.value) == (800, 19)
    assert cut is not None and "unclosed" in cut


# --------------------------------------------------------------------------------------------
# amd-smi


def test_amd_smi_static_of_4_mi300a_after_cpu_blocks() -> None:
    profile, notes, cut = _import("amd-smi-static-4x-mi300a.txt", AMD)
    assert _names(profile) == ["MI300A"] * 4
    assert [g.catalog_name.value for g in profile.gpus] == ["AMD Instinct MI300A"] * 4
    # The VRAM carve-out of the APU, as printed: 64289 MiB, not the 128 GB of HBM.
    assert [g.vram_total_bytes.value for g in profile.gpus] == [64289 * MIB] * 4
    assert profile.gpus[0].architecture.value == "gfx942"  # from the catalog row
    assert [g.pci_bus_id.value for g in profile.gpus] == [
        "0000:01:00.0",
        "0001:01:00.0",
        "0002:01:00.0",
        "0003:01:00.0",
    ]
    assert profile.gpus[0].power_limit_watts.value == 550.0
    assert profile.gpus[0].pcie_generation_max.value == 5
    assert profile.gpus[0].pcie_width_max.value == 16
    assert notes == ["amdgpu driver version 6.9.0-rc5+ (amd-smi DRIVER)"]
    assert cut is None


def test_amd_smi_static_asked_for_two_gpus_and_shows_one() -> None:
    profile, notes, cut = _import("amd-smi-static-mi350x-cut.txt", AMD)
    (gpu,) = profile.gpus
    assert gpu.name.value == "AMD Instinct MI350X"
    assert gpu.architecture.value == "gfx950"
    assert gpu.multiprocessor_count.value == 128
    assert gpu.pci_bus_id.value == "0000:05:00.0"
    assert gpu.serial.value is None  # "<redacted>"
    assert profile.platform.kernel.value == "5.15.0-164-generic"
    assert profile.platform.kernel.source is Source.AMD_SMI
    assert notes == ["amdgpu driver version 6.18.3 (amd-smi DRIVER)"]
    assert cut == "GPU 1 of the 2 the command asked for is not in the text"


def test_amd_smi_list_and_static_of_one_gpu_merge_and_the_nic_is_left_out() -> None:
    profile, _, cut = _import("amd-smi-list-static-mi210-cut.txt", AMD)
    (gpu,) = profile.gpus
    assert gpu.name.value == "AMD Instinct MI210"
    assert gpu.uuid.value == "67ff740f-0000-1000-80e6-b5bb3c3ce0db"  # from amd-smi list
    assert gpu.pci_bus_id.value == "0000:23:00.0"
    assert cut == "the text ends inside GPU 0's ASIC section ('ASIC_SERIA')"


def test_amd_smi_json_constructed() -> None:
    profile, notes, cut = _import("amd-smi-static-json-2x-mi300x-constructed.json", AMD)
    assert _names(profile) == ["AMD Instinct MI300X"] * 2
    assert [g.vram_total_bytes.value for g in profile.gpus] == [196592 * MIB] * 2
    assert [g.power_limit_watts.value for g in profile.gpus] == [750.0, 750.0]
    assert profile.gpus[1].pci_bus_id.value == "0000:26:00.0"
    assert profile.gpus[0].multiprocessor_count.value == 304
    assert notes == ["amdgpu driver version 6.10.5 (amd-smi DRIVER)"]
    assert cut is None


def test_amd_smi_json_of_rocm_6_1_cut_off() -> None:
    entry = {
        "gpu": 0,
        "asic": {"market_name": "N/A", "device_id": "0x74a0", "target_graphics_version": "gfx942"},
        "vram": {"type": "HBM", "size": "64289 MB"},
        "driver": {"name": "amdgpu", "version": "6.7.0"},
    }
    text = json.dumps([entry, {"gpu": 1, "asic": entry["asic"]}], indent=4)
    cut_text = text[: text.rindex('"device_id"')]
    _, read = read_one(cut_text, "x")
    assert read.truncated is not None
    profile = import_text(cut_text, "x")
    assert _names(profile) == ["AMD Instinct MI300A", None]
    assert profile.gpus[0].vram_total_bytes.value == 64289 * MIB
    assert read.notes[1] == "GPU 0: named from its PCI id 1002:74a0 (amd-smi printed no model name)"


def test_amd_smi_list_json_gives_bus_and_uuid() -> None:
    uuid = "a4ff74a1-0000-1000-8039-7e0e6c3c2c8f"
    text = f'[\n    {{"gpu": 0, "bdf": "0000:0C:00.0", "uuid": "{uuid}"}}\n]'
    (gpu,) = import_text(text, "list.json").gpus
    assert gpu.pci_bus_id.value == "0000:0c:00.0"
    assert gpu.uuid.value == uuid
    assert gpu.name.value is None


# --------------------------------------------------------------------------------------------
# Naming from the gfx target and memory, and what is never guessed


def _meminfo(target: str, total: int, extra: str = "") -> str:
    return (
        "============================ ROCm System Management Interface ======================\n"
        f"GPU[0]\t\t: VRAM Total Memory (B): {total}\n"
        "GPU[0]\t\t: VRAM Total Used Memory (B): 297771008\n"
        f"GPU[0]\t\t: GFX Version: \t\t{target}\n"
        f"{extra}"
        "=============================== End of ROCm SMI Log ================================\n"
    )


def test_a_gpu_known_only_by_gfx942_and_192_gib_is_an_mi300x() -> None:
    text = _meminfo("gfx942", 206141652992)
    _, read = read_one(text, "x")
    assert read.notes == [
        "GPU 0: named from its gfx target gfx942 and 192 GiB (rocm-smi printed no model name)"
    ]
    (gpu,) = import_text(text, "x").gpus
    assert gpu.name.value == "AMD Instinct MI300X"
    assert gpu.name.source is Source.CATALOG
    assert gpu.catalog_name.value == "AMD Instinct MI300X"


@pytest.mark.parametrize(
    ("target", "total", "why"),
    [
        ("gfx90a", 68702699520, "MI250X, MI250 and MI210 all have 64 GB per device"),
        ("gfx942", 48 * GIB, "a CPX partition of an MI300X shows 48 GB: near no row"),
        ("gfx1036", 67108864, "no row has the target"),
    ],
)
def test_a_target_that_fits_no_single_row_names_nothing(target: str, total: int, why: str) -> None:
    (gpu,) = import_text(_meminfo(target, total), "x").gpus
    assert gpu.name.value is None, why
    assert gpu.architecture.value == target


def test_a_printed_device_id_the_catalog_lacks_blocks_naming_by_target() -> None:
    # An MI308X (1002:74a2) is a gfx942 with 192 GB too: it must not become an MI300X.
    text = (
        "GPU: 0\n    ASIC:\n        MARKET_NAME: N/A\n        DEVICE_ID: 0x74a2\n"
        "        TARGET_GRAPHICS_VERSION: gfx942\n    VRAM:\n        SIZE: 196592 MB\n"
    )
    (gpu,) = import_text(text, "x").gpus
    assert gpu.name.value is None
    assert gpu.architecture.value == "gfx942"


def test_device_66a1_is_not_taken_for_a_name() -> None:
    text = _meminfo("gfx906", 34342961152, "GPU[0]\t\t: Card series: \t\tDevice 66a1\n")
    (gpu,) = import_text(text, "x").gpus
    # 1002:66a1 is an MI50 or a Radeon Pro VII: neither is guessed.
    assert gpu.name.value is None
    assert "'Device 66a1'" in (gpu.name.reason or "")


def test_two_gcds_of_one_mi250x_are_two_gpus_of_64_gb() -> None:
    rows = "".join(
        f"GPU[{i}]\t\t: Card Series: \t\tAMD INSTINCT MI200 (MCM) OAM AC MBA\n"
        f"GPU[{i}]\t\t: Card Model: \t\t0x7408\n"
        f"GPU[{i}]\t\t: VRAM Total Memory (B): 68702699520\n"
        for i in range(2)
    )
    profile = import_text(rows, "x")
    assert _names(profile) == ["AMD Instinct MI250X (one GCD)"] * 2
    assert [g.vram_total_bytes.value for g in profile.gpus] == [68702699520] * 2


@pytest.mark.parametrize(
    ("printed", "target"),
    [
        ("gfx942", "gfx942"),
        ("gfx9010", "gfx90a"),
        ("gfx9012", "gfx90c"),
        ("gfx11000", "gfx1100"),
        ("gfx1201", "gfx1201"),
        ("gfx90a:sramecc+:xnack-", "gfx90a"),
        ("N/A", None),
        ("Unknown", None),
        ("942", None),
    ],
)
def test_gfx_targets_as_rocm_smi_prints_them(printed: str, target: str | None) -> None:
    assert normalize_gfx_target(printed) == target


# --------------------------------------------------------------------------------------------
# The catalog's PCI ids and targets


@pytest.mark.parametrize(
    ("pci_id", "memory", "expected"),
    [
        ("1002:74a1", None, "AMD Instinct MI300X"),
        ("0x1002:0x74A1", None, "AMD Instinct MI300X"),
        ("1002:74a0", 64289 * MIB, "AMD Instinct MI300A"),
        ("1002:7408", None, "AMD Instinct MI250X (one GCD)"),
        ("1002:740f", None, "AMD Instinct MI210"),
        ("1002:738c", None, "AMD Instinct MI100"),
        ("1002:7448", None, "AMD Radeon PRO W7900"),
        ("1002:744c", 24 * GIB, "AMD Radeon RX 7900 XTX"),
        ("1002:744c", 21458059264, "AMD Radeon RX 7900 XT"),
        ("1002:744c", 16 * GIB, None),  # a 7900 GRE or 7900M
        ("1002:744c", None, None),
        ("1002:740c", 64 * GIB, None),  # "MI250X/MI250"
        ("1002:66a1", 32 * GIB, None),  # MI50 or Radeon Pro VII
        ("10de:2330", None, "H100 SXM"),
        ("10de:25b2", None, None),  # an RTX A400: not in the catalog
        ("74a1", None, None),
    ],
)
def test_pci_ids(pci_id: str, memory: int | None, expected: str | None) -> None:
    found = find_gpu_by_pci_id(pci_id, memory)
    assert (found.name if found else None) == expected


@pytest.mark.parametrize(
    ("target", "memory", "expected"),
    [
        ("gfx942", 192 * GIB, "AMD Instinct MI300X"),
        ("gfx942", 256 * GIB, "AMD Instinct MI325X"),
        ("gfx942", 128 * GIB, "AMD Instinct MI300A"),
        ("gfx942", None, None),
        ("gfx906", 16 * GIB, None),  # MI50 16GB or Radeon VII
        ("gfx906", 32 * GIB, None),  # MI50 32GB or MI60
        ("gfx1100", 48 * GIB, "AMD Radeon PRO W7900"),
        ("gfx1201", 16 * GIB, None),  # RX 9070 XT or RX 9070
        ("gfx1201", 8 * GIB, None),
        ("9.0", 80 * GIB, None),  # a CUDA capability is no gfx target
    ],
)
def test_targets(target: str, memory: int | None, expected: str | None) -> None:
    found = find_gpu_by_target(target, memory)
    assert (found.name if found else None) == expected


def test_new_amd_rows_carry_their_target_memory_and_source() -> None:
    rows = {row.name: row for row in load_catalog()}
    for name, target, memory in [
        ("AMD Instinct MI300A", "gfx942", 128),
        ("AMD Radeon Instinct MI50", "gfx906", 16),
        ("AMD Radeon Instinct MI60", "gfx906", 32),
        ("AMD Radeon PRO W7900", "gfx1100", 48),
        ("AMD Radeon RX 9070 XT", "gfx1201", 16),
    ]:
        row = rows[name]
        assert (row.target, row.memory_gb, row.vendor) == (target, memory, "amd")
        assert row.source and row.fp32_tflops and row.bandwidth_gbs
    assert rows["AMD Radeon PRO W7900"].gpu_class == "workstation"


def test_a_malformed_pci_id_is_refused_naming_its_key(tmp_path: Path) -> None:
    path = tmp_path / "gpus.toml"
    path.write_text(
        '[[gpu]]\nname = "X"\nclass = "datacenter"\nmatch = ["X"]\nvendor = "amd"\n'
        'source = "s"\nfp32_tflops = 1\npci_ids = ["1002:74A1"]\n',
        encoding="utf-8",
    )
    with pytest.raises(CatalogError, match="pci_ids"):
        load_catalog(path)


# --------------------------------------------------------------------------------------------
# Detection and what is refused


@pytest.mark.parametrize(
    "text",
    [
        "Driver version: 6.7.0\n",
        "GPU: 0\nsomething else\n",
        '{"card0": "x"}',
        "GPU  Temperature\n",
    ],
)
def test_text_that_only_resembles_amd_output_is_not_taken(text: str) -> None:
    assert detect_format(text) not in (ROCM, AMD)


def test_driver_version_alone_is_no_gpu() -> None:
    text = "device,Driver version\ncardsystem,6.7.0\n"
    assert looks_like_rocm_smi(Sample(text).head)
    with pytest.raises(InputError, match="no GPU in the rocm-smi output"):
        import_text(text, "driver.csv")


def test_a_kv_line_cut_at_its_value_is_flagged() -> None:
    text = "GPU[0]      : VRAM Total Memory (B): 206141652992\nGPU[1]      : VRAM Total Memory (B):"
    _, read = read_one(text, "x")
    assert read.truncated == "the text ends inside GPU 1's 'VRAM Total Memory (B)' line"
    assert [g.index for g in read.profile.gpus] == [0, 1]


def test_rocm_smi_json_system_driver_version() -> None:
    document = {
        "card0": {"Card Series": "AMD Instinct MI210", "GFX Version": "gfx90a"},
        "system": {"Driver version": "6.3.6"},
    }
    _, read = read_one(json.dumps(document), "x")
    assert read.notes == ["amdgpu driver version 6.3.6 (rocm-smi 'Driver version')"]
    (gpu,) = read.profile.gpus
    assert (gpu.name.value, gpu.architecture.value) == ("AMD Instinct MI210", "gfx90a")


def test_amd_smi_version_line_gives_the_rocm_version() -> None:
    text = (
        "$ amd-smi version\n"
        "AMDSMI Tool: 25.4.2+aca1101 | AMDSMI Library version: 25.4.0 | ROCm version: 6.4.1 | "
        "amdgpu version: 6.10.5 | amd_hsmp version: N/A\n"
        "$ amd-smi static --asic\nGPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI300X\n"
    )
    _, read = read_one(text, "x")
    assert read.notes == ["ROCm 6.4.1 (amd-smi version line)"]
    assert read.profile.gpus[0].name.value == "AMD Instinct MI300X"


def test_amd_smi_json_after_its_command_line() -> None:
    entry = {"gpu": 0, "asic": {"market_name": "AMD Instinct MI210", "device_id": "0x740f"}}
    text = "$ amd-smi static --asic --json\n" + json.dumps([entry], indent=4)
    assert detect_format(text) == AMD
    assert import_text(text, "x").gpus[0].name.value == "AMD Instinct MI210"
