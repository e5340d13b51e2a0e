"""The hard NVIDIA cases, through the importers that read them: MIG-enabled A100/H100 tables (the
MIG devices table adds instances, never GPUs), GH200, Jetson Orin, machines with two GPU
models, tables with ERR! and N/A cells, and the banners of old and new drivers."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.importers.detect import SMI_Q, SMI_TABLE, detect_format, import_text
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import Profile

IMPORT = Path(__file__).parent / "fixtures" / "import"
MIB = 1024**2


def _read(name: str, kind: str = SMI_TABLE) -> Profile:
    text = (IMPORT / name).read_text(encoding="utf-8")
    assert detect_format(text) == kind
    return import_text(text, name)


def _cut(profile: Profile) -> str | None:
    assert profile.imported is not None
    return profile.imported.files[0].truncated


# --------------------------------------------------------------------------------------------
# MIG


def test_mig_on_one_of_two_a100s() -> None:
    profile = _read("smi-table-510-mig-a100-sxm-one-enabled-cut.txt")
    first, second = profile.gpus  # the paste shows two GPUs; MIG makes no more of them
    assert (first.mig_enabled.value, second.mig_enabled.value) == (False, True)
    # A MIG-enabled GPU's table row still shows the whole card's memory.
    assert first.vram_total_bytes.value == second.vram_total_bytes.value == 81920 * MIB
    assert second.utilization_percent.value is None  # "N/A" under MIG
    assert second.utilization_percent.reason == "nvidia-smi reports N/A for utilisation"
    assert first.catalog_name.value == "A100 SXM4 80GB"
    # The paste stops inside the border under GPU 1: more GPUs may follow.
    assert _cut(profile) == "the table is cut after GPU 1"
    assert profile.nvml.device_count.value is None


def test_mig_on_both_a100_80gb() -> None:
    profile = _read("smi-table-520-mig-2x-a100-80gb-cut.txt")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA A100 80G..."] * 2
    assert all(g.mig_enabled.value is True and g.mig_instances == [] for g in profile.gpus)
    assert [g.pci_bus_id.value for g in profile.gpus] == ["00000000:31:00.0", "00000000:B1:00.0"]
    assert _cut(profile) == "the table is cut after GPU 1"


def test_mig_devices_table_gives_instances_not_gpus() -> None:
    profile = _read("smi-table-535-mig-devices-2x-h100-constructed.txt")
    first, second = profile.gpus
    assert first.mig_enabled.value is True and second.mig_enabled.value is False
    assert [m.index for m in first.mig_instances] == [0, 1]
    assert [m.gpu_instance_id.value for m in first.mig_instances] == [1, 2]
    assert [m.compute_instance_id.value for m in first.mig_instances] == [0, 0]
    assert [m.memory_total_bytes.value for m in first.mig_instances] == [40192 * MIB] * 2
    assert [m.multiprocessor_count.value for m in first.mig_instances] == [60, 60]
    # The slices' memory is theirs: the card keeps its own.
    assert first.vram_total_bytes.value == 81559 * MIB
    assert second.mig_instances == []
    assert _cut(profile) is None and profile.nvml.device_count.value == 2


def test_mig_profile_tables_add_nothing() -> None:
    # A README holding the table, then `nvidia-smi mig -lgip` and `mig -lgi` tables.
    profile = _read("smi-table-450-a100-40gb-mig-profile-tables.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "A100-SXM4-40GB" and gpu.vram_total_bytes.value == 40537 * MIB
    assert gpu.mig_enabled.value is False and gpu.mig_instances == []
    assert _cut(profile) is None


def test_mig_rows_without_the_banner() -> None:
    # A paste that starts at the third head line: the GPU rows are read, the cut is reported.
    profile = _read("smi-table-580-mig-rtx-pro-6000-no-banner-cut.txt")
    assert [g.index for g in profile.gpus] == [0, 1, 2]
    assert [g.mig_enabled.value for g in profile.gpus] == [False, False, True]
    assert profile.gpus[2].pci_bus_id.value == "00000001:04:00.0"
    assert profile.gpus[2].vram_used_bytes.value == 287 * MIB
    assert profile.nvml.driver_version.value is None
    assert profile.nvml.driver_version.reason == "no nvidia-smi banner in the text"
    assert _cut(profile) == (
        "no nvidia-smi banner: the text holds part of the table; the table is cut after GPU 2"
    )


def test_mig_devices_in_q_text_are_instances_not_gpus() -> None:
    profile = _read("smi-q-535-2x-h100-constructed.txt", SMI_Q)
    assert len(profile.gpus) == 2
    assert len(profile.gpus[0].mig_instances) == 2 and profile.gpus[1].mig_instances == []


# --------------------------------------------------------------------------------------------
# GH200 and Jetson


def test_gh200_is_its_hbm_not_its_superchip_total() -> None:
    profile = _read("smi-table-570-gh200-480gb.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "NVIDIA GH200 480GB"  # as printed
    # "480GB" is the superchip (with Grace's LPDDR5X); the GPU has 97871 MiB of HBM3.
    assert gpu.vram_total_bytes.value == 97871 * MIB
    assert gpu.vram_total_bytes.source == Source.NVIDIA_SMI
    assert gpu.catalog_name.value == "GH200 (96 GB HBM3)"
    assert gpu.pci_bus_id.value == "00000009:01:00.0"
    assert gpu.power_limit_watts.value == 900.0
    assert gpu.compute_capability.value == "9.0" and gpu.compute_capability.source == Source.CATALOG
    assert _cut(profile) is None


#: file → (driver, CUDA, where the paste ends: inside the box below the GPU table)
JETSON = {
    "smi-table-540-jetson-agx-orin-64gb.txt": (
        "540.4.0", "12.6", "the text ends inside the Processes box"
    ),
    "smi-table-540-jetson-orin-jetpack6-prompt.txt": (
        "540.4.0", "12.6", "the text ends inside the box below the GPUs"
    ),
    "smi-table-540-jetson-orin-driver-na.txt": (
        None, "12.2", "the text ends inside the box below the GPUs"
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(JETSON))
def test_jetson_orin_row_of_n_a_cells(name: str) -> None:
    driver, cuda, cut = JETSON[name]
    profile = _read(name)
    (gpu,) = profile.gpus  # read, though its persistence column says N/A, not On/Off
    assert gpu.name.value == "Orin (nvgpu)"
    assert profile.nvml.driver_version.value == driver
    assert profile.nvml.cuda_driver_version.value == cuda
    # Its memory is the system's: nvidia-smi says "Not Supported", and so does the profile.
    assert gpu.vram_total_bytes.value is None
    assert gpu.vram_total_bytes.reason == "nvidia-smi reports Not Supported for memory"
    assert gpu.pci_bus_id.reason == "nvidia-smi reports N/A for the bus id"
    assert gpu.persistence_mode.reason == "nvidia-smi reports N/A for persistence mode"
    assert gpu.temperature_c.value is None and gpu.power_limit_watts.value is None
    assert gpu.catalog_name.value is None  # hwadvisor's catalog has no Jetson row
    assert _cut(profile) == cut
    assert profile.nvml.device_count.value == 1  # the GPU table itself is whole


def test_jetson_driver_n_a_is_unknown_not_a_version() -> None:
    profile = _read("smi-table-540-jetson-orin-driver-na.txt")
    assert profile.nvml.driver_version.reason == "nvidia-smi reports N/A"


# --------------------------------------------------------------------------------------------
# Two GPU models in one machine


def test_each_gpu_keeps_its_own_model_and_memory() -> None:
    profile = _read("smi-table-550-mixed-rtx3090-rtx3060-constructed.txt")
    big, small = profile.gpus
    assert (big.name.value, small.name.value) == (
        "NVIDIA GeForce RTX 3090",
        "NVIDIA GeForce RTX 3060",
    )
    assert (big.vram_total_bytes.value, small.vram_total_bytes.value) == (24576 * MIB, 12288 * MIB)
    assert (big.power_limit_watts.value, small.power_limit_watts.value) == (350.0, 170.0)
    assert big.catalog_name.value == "GeForce RTX 3090"
    assert small.catalog_name.value != big.catalog_name.value


def test_two_laptop_models_in_one_rig() -> None:
    profile = _read("smi-table-535-mixed-rtx3070-rtx3080-laptop-cut.txt")
    first, second = profile.gpus
    assert first.name.value == "NVIDIA GeForce RTX 3070 ..."
    assert second.name.value == "NVIDIA GeForce RTX 3080 ..."
    assert first.utilization_percent.value == second.utilization_percent.value == 100
    assert (first.temperature_c.value, second.temperature_c.value) == (45, 59)
    assert first.catalog_name.value != second.catalog_name.value


# --------------------------------------------------------------------------------------------
# ERR! and N/A cells; old and new banners


def test_err_power_reading_is_unknown_and_the_rest_is_read() -> None:
    # One GPU's block, pasted without the banner (Azure/azhpc-diagnostics #77).
    profile = _read("smi-table-err-power-v100-fragment.txt")
    (gpu,) = profile.gpus
    assert gpu.index == 1 and gpu.name.value == "Tesla V100-PCIE..."
    assert gpu.power_draw_watts.value is None
    assert gpu.power_draw_watts.reason == "nvidia-smi reports ERR! for power draw"
    assert gpu.power_limit_watts.value == 250.0
    assert gpu.vram_total_bytes.value == 16160 * MIB and gpu.temperature_c.value == 29
    assert gpu.pci_bus_id.value == "00008ED0:00:00.0"
    assert _cut(profile) == "no nvidia-smi banner: the text holds part of the table"


def test_driver_325_table_with_mb_units_and_n_a_cells() -> None:
    profile = _read("smi-table-325-3x-gtx-titan-na-mb.txt")
    assert profile.nvml.driver_version.value == "325.15"
    assert profile.nvml.cuda_driver_version.value is None
    assert [g.name.value for g in profile.gpus] == ["GeForce GTX TITAN"] * 3
    first = profile.gpus[0]
    assert first.vram_total_bytes.value == 6143 * MIB  # "6143MB": what later drivers print as MiB
    assert first.temperature_c.value == 44
    assert first.power_draw_watts.reason == "nvidia-smi reports N/A for power draw"
    assert first.pci_bus_id.value == "00000000:03:00.0"
    assert _cut(profile) == "the text ends inside the Compute processes box"
    assert profile.nvml.device_count.value == 3


def test_driver_610_banner_says_kmd_and_cuda_umd() -> None:
    profile = _read("smi-table-610-kmd-2x-rtx5090-cut.txt")
    assert profile.nvml.driver_version.value == "610.57.04"
    assert profile.nvml.cuda_driver_version.value == "13.3"
    assert [g.power_limit_watts.value for g in profile.gpus] == [575.0, 600.0]
    assert _cut(profile) == "the table is cut after GPU 1"
