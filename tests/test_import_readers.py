"""The readers of issue 26: lspci, lshw -C display, inxi -G, clinfo, sycl-ls, xpu-smi discovery,
npu-smi info, tegrastats, jetson_release and amd-smi's default table, on the recorded pastes in
tests/fixtures/import (sources in SOURCES.md) and on small texts written here for the cases no
recording covers; and no cut of a recording gives anything but a profile or one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwadvisor.cli import main
from hwadvisor.errors import InputError
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.importers.detect import detect_format, import_text
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import Profile

IMPORT = Path(__file__).parent / "fixtures" / "import"
NEW = (
    "lspci-",
    "lshw-",
    "inxi-",
    "clinfo-",
    "sycl-ls-",
    "xpu-smi-",
    "npu-smi-",
    "tegrastats-",
    "jetson-",
    "amd-smi-table-",
)
PASTES = sorted(p.name for p in IMPORT.iterdir() if p.name.startswith(NEW))
GIB = 2**30


def _read(name: str) -> Profile:
    return import_text((IMPORT / name).read_text(encoding="utf-8"), name)


def _message(profile: Profile) -> str:
    return profile.diagnostics.probes[0].message or ""


def _refused(text: str) -> str:
    with pytest.raises(InputError) as caught:
        import_text(text, "paste.txt")
    message = str(caught.value)
    assert message.startswith("paste.txt: ") and "\n" not in message
    return message


def test_every_reader_has_at_least_two_recordings() -> None:
    formats = [detect_format((IMPORT / name).read_text(encoding="utf-8")) for name in PASTES]
    for name in (
        "lspci output",
        "lshw -C display",
        "inxi -G",
        "clinfo output",
        "sycl-ls output",
        "xpu-smi discovery",
        "npu-smi info",
        "tegrastats",
        "jetson_release",
    ):
        assert formats.count(name) >= 2, name
    assert sum(name.startswith("amd-smi-table-") for name in PASTES) >= 2


# ------------------------------------------------------------------------------------- lspci


def test_lspci_names_an_unnamed_device_by_its_pci_id() -> None:
    profile = _read("lspci-intel-max-1100-device-0bda.txt")
    assert [g.name.value for g in profile.gpus] == ["Intel Data Center GPU Max 1100"] * 2
    assert profile.gpus[0].name.source is Source.CATALOG
    assert profile.gpus[0].backend == "xpu"
    assert profile.gpus[0].vram_total_bytes.value == 48 * GIB  # the catalog's, said as such
    assert profile.gpus[0].vram_total_bytes.source is Source.CATALOG
    assert [g.pci_bus_id.value for g in profile.gpus] == ["0000:29:00.0", "0000:9a:00.0"]
    message = _message(profile)
    assert "8086:0bda" in message and "ASPEED" in message  # the BMC display is left out


def test_lspci_nnk_reads_gpus_not_their_audio_functions() -> None:
    profile = _read("lspci-nnk-2x-rtx3090.txt")
    assert [g.pci_bus_id.value for g in profile.gpus] == ["0000:05:00.0", "0000:0a:00.0"]
    assert {g.catalog_name.value for g in profile.gpus} == {"GeForce RTX 3090"}
    assert "kernel driver in use: nvidia" in _message(profile)
    assert profile.imported is not None and profile.imported.files[0].truncated is None


def test_lspci_keeps_a_gpu_it_cannot_name_with_the_reason() -> None:
    profile = _read("lspci-v-device-25b2-cut.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value is None and "10de:25b2" in (gpu.name.reason or "")
    assert gpu.pci_bus_id.value == "0004:01:00.0"
    assert "input-truncated" in {f.id for f in profile.findings}


def test_lspci_integrated_graphics_only_is_refused_with_what_to_paste() -> None:
    text = (
        "00:02.0 VGA compatible controller: Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]\n"
    )
    message = _refused(text)
    assert "Iris Xe Graphics" in message and "nvidia-smi" in message


def test_lspci_reads_data_center_lines_and_instinct_as_processing_accelerator() -> None:
    text = (
        "07:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] "
        "(rev a1)\n"
        "1b:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram "
        "[Instinct MI300X]\n"
        "3b:00.0 3D controller: NVIDIA Corporation AD102GL [L20] (rev a1)\n"
    )
    profile = import_text(text, "paste.txt")
    assert [g.catalog_name.value for g in profile.gpus] == [
        "A100 40GB",
        "AMD Instinct MI300X",
        "L20",
    ]
    assert [g.backend for g in profile.gpus] == ["cuda", "rocm", "cuda"]


def test_lspci_lists_gaudi_and_ascend_as_accelerators_not_modelled() -> None:
    text = (
        "19:00.0 Processing accelerators: Habana Labs Ltd. HL-2000 AI Training Accelerator "
        "[Gaudi] (rev 01)\n"
        "1a:00.0 Processing accelerators: Habana Labs Ltd. HL-2000 AI Training Accelerator "
        "[Gaudi] (rev 01)\n"
        "02:00.0 VGA compatible controller: ASPEED Technology, Inc. ASPEED Graphics Family\n"
    )
    profile = import_text(text, "paste.txt")
    assert profile.gpus == []
    (finding,) = [f for f in profile.findings if f.id == "accelerator-not-modelled"]
    assert "2 Habana Gaudi accelerators" in finding.detail


# -------------------------------------------------------------------------------- lshw, inxi


def test_lshw_reads_the_gpu_and_leaves_out_integrated_graphics() -> None:
    profile = _read("lshw-display-gtx1050ti-mobile-uhd630.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "NVIDIA GeForce GTX 1050 Ti Mobile"
    assert gpu.pci_bus_id.value == "0000:01:00.0"
    assert "nouveau" in _message(profile) and "UHD Graphics 630" in _message(profile)


def test_lshw_cut_inside_an_unclaimed_node() -> None:
    profile = _read("lshw-full-gtx1050ti-mobile-unclaimed-cut.txt")
    assert profile.gpus[0].name.value == "NVIDIA GeForce GTX 1050 Ti Mobile"
    assert "UNCLAIMED" in _message(profile)
    assert profile.imported is not None and profile.imported.files[0].truncated


def test_inxi_reads_the_nvidia_driver_version_and_bus() -> None:
    profile = _read("inxi-Gx-gtx1080-430.txt")
    assert profile.nvml.driver_version.value == "430.40"
    assert profile.nvml.driver_version.source is Source.INXI
    assert profile.gpus[0].pci_bus_id.value == "0000:01:00.0"
    assert profile.gpus[0].catalog_name.value == "GeForce GTX 1080"


def test_inxi_names_a_device_by_its_chip_id() -> None:
    text = (
        "Graphics:\n"
        "  Device-1: NVIDIA driver: nvidia v: 550.54.14 bus-ID: 41:00.0 chip-ID: 10de:2330\n"
        "  Display: server: X.Org v: 21.1.4 driver: N/A\n"
    )
    profile = import_text(text, "paste.txt")
    assert profile.gpus[0].name.value == "H100 SXM"
    assert profile.gpus[0].pci_bus_id.value == "0000:41:00.0"
    assert "10de:2330" in _message(profile)


# ----------------------------------------------------------------------------------- clinfo


CLINFO_TWO_PLATFORMS = """Number of platforms                               2
  Platform Name                                   NVIDIA CUDA
  Platform Name                                   rusticl

  Platform Name                                   NVIDIA CUDA
Number of devices                                 2
  Device Name                                     NVIDIA A100-SXM4-80GB
  Device Vendor ID                                0x10de
  Driver Version                                  535.104.05
  Device Type                                     GPU
  Global memory size                              85097971712 (79.25GiB)
  Device Name                                     NVIDIA A100-SXM4-80GB
  Device Vendor ID                                0x10de
  Driver Version                                  535.104.05
  Device Type                                     GPU
  Global memory size                              85097971712 (79.25GiB)

  Platform Name                                   rusticl
Number of devices                                 1
  Device Name                                     NVIDIA A100-SXM4-80GB
  Device Type                                     GPU

NULL platform behavior
  clGetPlatformInfo(NULL, CL_PLATFORM_NAME, ...)  No platform
"""


def test_clinfo_counts_a_gpu_two_platforms_list_once_and_reads_its_memory() -> None:
    profile = import_text(CLINFO_TWO_PLATFORMS, "paste.txt")
    assert len(profile.gpus) == 2
    assert profile.gpus[0].vram_total_bytes.value == 85097971712
    assert profile.gpus[0].vram_total_bytes.source is Source.CLINFO
    assert profile.nvml.driver_version.value == "535.104.05"
    assert "2 OpenCL platforms" in _message(profile)
    assert profile.imported is not None and profile.imported.files[0].truncated is None


def test_clinfo_recordings() -> None:
    quadro = _read("clinfo-quadro-fx580-cut.txt")
    assert quadro.gpus[0].name.value == "NVIDIA Quadro FX 580"
    assert quadro.nvml.driver_version.value == "340.96"
    listing = _read("clinfo-l-rtx3090-uhd750.txt")
    assert [g.catalog_name.value for g in listing.gpus] == ["GeForce RTX 3090"]
    assert "UHD Graphics 750" in _message(listing)


def test_clinfo_with_cpu_devices_only_says_what_to_paste() -> None:
    message = _refused((IMPORT / "clinfo-cpu-only-xeon-e5-2630v3-cut.txt").read_text())
    assert "no GPU" in message and "Xeon(R) CPU E5-2630 v3" in message and "lscpu" in message


# ------------------------------------------------------------------------- sycl-ls, xpu-smi


def test_sycl_ls_counts_one_gpu_once_across_backends() -> None:
    text = (
        "[level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Arc(TM) A770 Graphics "
        "12.55.8 [1.3.29735]\n"
        "[opencl:gpu][opencl:0] Intel(R) OpenCL Graphics, Intel(R) Arc(TM) A770 Graphics "
        "OpenCL 3.0 NEO  [24.22.29735.27]\n"
        "[opencl:cpu][opencl:1] Intel(R) OpenCL, 13th Gen Intel(R) Core(TM) i7-13700K "
        "OpenCL 3.0 (Build 0) [2024.18.7.0.11_160000]\n"
    )
    profile = import_text(text, "paste.txt")
    (gpu,) = profile.gpus
    assert gpu.catalog_name.value == "Intel Arc A770 (16 GB)"
    assert gpu.backend == "xpu"
    assert "2 SYCL backends" in _message(profile)


def test_sycl_ls_of_2021_lists_platforms_only_and_is_refused() -> None:
    message = _refused((IMPORT / "sycl-ls-old-cpu-only-no-gpu.txt").read_text())
    assert "no GPU" in message


def test_xpu_smi_reads_memory_and_bus_where_printed() -> None:
    border = "+-----------+" + "-" * 40 + "+"
    rows = [
        ("Device ID", "Device Information"),
        ("0", "Device Type: GPU"),
        ("", "Device Name: Intel(R) Data Center GPU Max 1550"),
        ("", "PCI Device ID: 0x0bd5"),
        ("", "PCI BDF Address: 0000:29:00.0"),
        ("", "Memory Physical Size: 131072.00 MiB"),
    ]
    body = [f"| {a:<9} | {b:<38} |" for a, b in rows]
    text = "\n".join([border, body[0], border, *body[1:], border]) + "\n"
    profile = import_text(text, "paste.txt")
    (gpu,) = profile.gpus
    assert gpu.catalog_name.value == "Intel Data Center GPU Max 1550"
    assert gpu.vram_total_bytes.value == 128 * GIB
    assert gpu.pci_bus_id.value == "0000:29:00.0"
    assert profile.imported is not None and profile.imported.files[0].truncated is None


def test_xpu_smi_leaves_out_the_integrated_gpu() -> None:
    profile = _read("xpu-smi-discovery-uhd770-flex140-cut.txt")
    assert [g.name.value for g in profile.gpus] == ["Intel(R) Data Center GPU Flex 140"]
    assert "UHD Graphics 770" in _message(profile)


# ---------------------------------------------------------------------------------- npu-smi


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "npu-smi-info-2x-910b4-1-cut.txt",
            "2 Huawei Ascend 910B4-1 NPU chips on 2 NPU(s), 64 GiB HBM",
        ),
        ("npu-smi-info-25.3-ascend910-2-chips-cut.txt", "Ascend910 NPU chips on 2 NPU(s), 64 GiB"),
    ],
)
def test_npu_smi_is_an_accelerator_not_modelled_with_count_and_memory(
    name: str, words: str
) -> None:
    profile = _read(name)
    assert profile.gpus == []
    (finding,) = [f for f in profile.findings if f.id == "accelerator-not-modelled"]
    assert words in finding.detail


# ------------------------------------------------------------------------------- Jetson


def test_tegrastats_names_the_one_module_that_fits() -> None:
    profile = _read("tegrastats-agx-orin-64gb.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "Jetson AGX Orin 64GB" and gpu.name.source is Source.CATALOG
    assert gpu.compute_capability.value == "8.7"
    assert gpu.vram_total_bytes.value == 62801 * 2**20
    assert gpu.utilization_percent.value == 0
    assert profile.memory.total_bytes.value == 62801 * 2**20
    assert profile.cpu.logical_cores.value == 12


def test_tegrastats_that_fits_several_modules_asks_for_jetson_release() -> None:
    message = _refused((IMPORT / "tegrastats-tx2-loop-cut.txt").read_text())
    assert "7854 MB" in message and "6 CPU cores" in message and "jetson_release" in message


def test_jetson_release_reads_module_and_cuda_architecture() -> None:
    xavier = _read("jetson-release-v2-agx-xavier-16gb.txt")
    assert xavier.gpus[0].catalog_name.value == "Jetson AGX Xavier"
    assert xavier.gpus[0].compute_capability.value == "7.2"
    assert xavier.gpus[0].vram_total_bytes.value == 16 * GIB
    orin = _read("jetson-stats-board-agx-orin-32gb.txt")
    assert orin.gpus[0].catalog_name.value == "Jetson AGX Orin 32GB"
    assert "L4T 35.3.1" in _message(orin)


# ------------------------------------------------------------------------ amd-smi's table


def test_amd_smi_table_reads_power_memory_and_partitions() -> None:
    profile = _read("amd-smi-table-mi300x-dpx-cut.txt")
    first = profile.gpus[0]
    assert first.pci_bus_id.value == "0000:05:00.0"
    assert first.power_draw_watts.value == 142 and first.power_limit_watts.value == 750
    assert first.vram_total_bytes.value == 196592 * 2**20
    assert first.vram_used_bytes.value == 283 * 2**20
    assert first.temperature_c.value == 40
    assert "DPX/NPS1" in _message(profile) and "ROCm 7.0.2" in _message(profile)
    assert profile.imported is not None and profile.imported.files[0].truncated


def test_amd_smi_table_is_not_taken_for_an_nvidia_smi_table() -> None:
    text = (IMPORT / "amd-smi-table-mi300x-dpx-cut.txt").read_text()
    assert detect_format(text) == "amd-smi output"


# --------------------------------------------------------------------- CLI and cut pastes


def test_cli_refusal_is_one_line_with_the_input_error_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "clinfo.txt"
    source.write_text((IMPORT / "clinfo-cpu-only-xeon-e5-2630v3-cut.txt").read_text())
    assert main(["import", str(source), "--json", str(tmp_path / "out.json"), "-q"]) == (
        ExitStatus.INPUT_ERROR
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no GPU" in err


def _imports_or_one_line(text: str) -> None:
    try:
        profile = import_text(text, "paste.txt")
    except InputError as exc:
        assert str(exc).startswith("paste.txt: ") and "\n" not in str(exc)
        return
    for gpu in profile.gpus:
        assert gpu.vram_total_bytes.value is None or gpu.vram_total_bytes.value > 0


@pytest.mark.parametrize("name", PASTES)
def test_every_line_cut_of_the_recordings_imports_or_is_one_line(name: str) -> None:
    lines = (IMPORT / name).read_text(encoding="utf-8").splitlines(keepends=True)
    for end in range(1, len(lines) + 1):
        _imports_or_one_line("".join(lines[:end]))


@pytest.mark.parametrize("name", PASTES)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(data=st.data())
def test_any_cut_of_the_recordings_imports_or_is_one_line(name: str, data: st.DataObject) -> None:
    text = (IMPORT / name).read_text(encoding="utf-8")
    start = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    end = data.draw(st.integers(min_value=start + 1, max_value=len(text)))
    _imports_or_one_line(text[start:end])
