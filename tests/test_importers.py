"""Importers: collect_env text, the nvidia-smi table, and format detection, on real recordings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hwadvisor import __version__
from hwadvisor.errors import InputError
from hwadvisor.importers.collect_env import CollectEnvError, parse_collect_env
from hwadvisor.importers.detect import UNKNOWN_FORMAT, detect_format, import_file, import_text
from hwadvisor.importers.nvidia_smi_table import NvidiaSmiTableError, parse_nvidia_smi_table
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import NvmlStatus, Profile
from tests.helpers.expectations import refused

FIXTURES = Path(__file__).parent / "fixtures"
IMPORT = FIXTURES / "import"
MIB = 1024**2


def load(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


def finding_ids(profile: Profile) -> list[str]:
    return [finding.id for finding in profile.findings]


# --------------------------------------------------------------------------------------------
# collect_env


def test_collect_env_linux_4x_a100() -> None:
    profile = parse_collect_env(load("collect_env-linux-cuda-4x-a100-sxm4-80gb.txt"))
    torch = profile.frameworks.torch
    assert torch.installed
    assert torch.version.value == "2.1.2+cu121"
    assert torch.version.source is Source.COLLECT_ENV
    assert torch.build.value == "cuda"
    assert torch.cuda_runtime_version.value == "12.1"
    assert torch.cuda_available.value is True
    assert torch.cudnn_version.value is None
    assert torch.cudnn_version.reason == "collect_env reports 'Could not collect'"
    assert profile.nvml.driver_version.value == "535.104.05"
    assert profile.nvml.cuda_driver_version.reason == "not in collect_env output"
    assert [(g.index, g.name.value, g.vendor, g.backend) for g in profile.gpus] == [
        (i, "NVIDIA A100-SXM4-80GB", "nvidia", "cuda") for i in range(4)
    ]
    assert profile.gpus[0].vram_total_bytes.value is None
    cpu = profile.cpu
    assert cpu.model_name.value == "AMD EPYC 7763 64-Core Processor"
    assert cpu.vendor.value == "AMD"
    assert cpu.architecture.value == "x86_64"
    assert cpu.logical_cores.value == 256
    # The paste ends before "Socket(s)": physical cores cannot be known.
    assert cpu.physical_cores.value is None
    assert cpu.physical_cores.reason
    assert profile.platform.os.value == "Linux"
    assert profile.platform.distribution.value == "Ubuntu 22.04.3 LTS"
    assert profile.platform.python_version.value == "3.10.12"
    assert profile.platform.wsl.value is False


def test_collect_env_8x_a100_with_prompt_and_cudnn_list() -> None:
    profile = parse_collect_env(load("collect_env-linux-cuda-8x-a100-sxm4-40gb.txt"))
    assert profile.frameworks.torch.version.value == "2.3.0+cu121"
    assert [g.name.value for g in profile.gpus] == ["NVIDIA A100-SXM4-40GB"] * 8
    assert [g.index for g in profile.gpus] == list(range(8))
    assert profile.nvml.driver_version.value == "550.54.14"
    assert profile.nvml.device_count.value == 8
    assert profile.frameworks.torch.cudnn_version.value is None
    assert "cuDNN library files" in (profile.frameworks.torch.cudnn_version.reason or "")
    assert profile.platform.python_version.value == "3.9.19"
    assert profile.cpu.model_name.reason == "not in collect_env output"


def test_collect_env_cpu_only_without_gpu() -> None:
    profile = import_text(load("collect_env-linux-cpu-only-ryzen.txt"), "ryzen")
    torch = profile.frameworks.torch
    assert torch.version.value == "2.6.0+cpu"
    assert torch.build.value == "cpu"
    assert torch.cuda_available.value is False
    assert torch.cuda_runtime_version.reason == "collect_env reports 'None'"
    assert profile.gpus == []
    assert profile.nvml.driver_version.reason == "collect_env reports 'No CUDA'"
    assert profile.cpu.model_name.value == "AMD Ryzen 7 6800U with Radeon Graphics"
    assert profile.cpu.logical_cores.value == 16
    assert profile.platform.distribution.value == "Ubuntu 24.10"
    # A CPU-only build is right for a machine without a GPU.
    assert "torch-cpu-only" not in finding_ids(profile)


def test_collect_env_cpu_build_beside_an_nvidia_gpu_is_flagged() -> None:
    profile = import_text(load("collect_env-windows-cpu-build-rtx4080.txt"), "win")
    torch = profile.frameworks.torch
    assert torch.version.value == "2.2.2"
    assert torch.build.value == "cpu"
    assert [g.name.value for g in profile.gpus] == ["NVIDIA GeForce RTX 4080 Laptop GPU"]
    assert profile.nvml.driver_version.value == "551.86"
    assert "torch-cpu-only" in finding_ids(profile)
    assert profile.platform.os.value == "Windows"
    assert profile.platform.distribution.value == "Microsoft Windows 11 Education"
    assert profile.cpu.model_name.value == "13th Gen Intel(R) Core(TM) i9-13980HX"
    assert profile.cpu.vendor.value == "Intel"
    assert profile.cpu.architecture.value == "x86_64"  # wmic Architecture=9
    assert profile.cpu.base_frequency_mhz.value == 2200.0


def test_collect_env_windows_cuda() -> None:
    profile = parse_collect_env(load("collect_env-windows-cuda-gtx1050ti.txt"))
    torch = profile.frameworks.torch
    assert torch.version.value == "2.0.1+cu117"
    assert torch.build.value == "cuda"
    assert torch.cuda_runtime_version.value == "11.7"
    assert [g.name.value for g in profile.gpus] == ["NVIDIA GeForce GTX 1050 Ti"]
    assert profile.nvml.driver_version.value == "535.98"
    assert profile.cpu.model_name.value == "Intel(R) Core(TM) i7-10700 CPU @ 2.90GHz"
    assert profile.platform.python_version.value == "3.9.16"


def test_collect_env_rocm() -> None:
    profile = import_text(load("collect_env-linux-rocm-3.7.txt"), "rocm")
    torch = profile.frameworks.torch
    assert torch.version.value == "1.7.0a0+9ddd3df"
    assert torch.build.value == "rocm"
    assert torch.hip_version.value == "3.7.20315"
    assert torch.cuda_runtime_version.value is None
    assert [(g.name.value, g.vendor, g.backend) for g in profile.gpus] == [
        ("Device 66a1", "amd", "rocm")
    ]
    assert profile.nvml.driver_version.value is None
    assert profile.platform.python_version.value == "3.6"
    assert "rocm-gpus" in finding_ids(profile)


def test_collect_env_macos() -> None:
    profile = parse_collect_env(load("collect_env-macos-m2-max.txt"))
    assert profile.frameworks.torch.version.value == "2.10.0.dev20251008"
    assert profile.frameworks.torch.build.value == "cpu"
    assert profile.gpus == []
    assert profile.cpu.model_name.value == "Apple M2 Max"
    assert profile.cpu.vendor.value == "Apple"
    assert profile.cpu.architecture.value == "aarch64"
    assert profile.platform.os.value == "Darwin"
    assert profile.platform.distribution.value == "macOS 13.7.4"
    assert profile.frameworks.torch.xpu_available.value is False


def test_collect_env_cpu_section_only() -> None:
    profile = import_text(load("collect_env-cpu-section-xeon-8480.txt"), "xeon")
    cpu = profile.cpu
    assert cpu.model_name.value == "Intel(R) Xeon(R) Platinum 8480+"
    assert cpu.logical_cores.value == 224
    assert cpu.sockets.value == 2
    assert cpu.physical_cores.value == 112
    assert cpu.max_frequency_mhz.value == 3800.0
    assert cpu.isa_features.value == ["sse4_2", "fma"]
    # Nothing says whether torch is installed: no finding may claim it is not.
    assert not profile.frameworks.torch.installed
    assert "torch-not-installed" not in finding_ids(profile)


def test_collect_env_torch_not_importable() -> None:
    text = "PyTorch version: N/A\nIs debug build: N/A\nCUDA used to build PyTorch: N/A\n"
    profile = import_text(text, "na")
    assert not profile.frameworks.torch.installed
    assert "torch-not-installed" in finding_ids(profile)


def test_collect_env_hostile_gpu_name_is_data() -> None:
    text = (
        "PyTorch version: 2.1.0\nCUDA used to build PyTorch: 12.1\n"
        "GPU models and configuration: GPU 0: <script>alert(1)</script>\n"
        "Nvidia driver version: 535.104.05\n"
    )
    profile = parse_collect_env(text)
    assert profile.gpus[0].name.value == "<script>alert(1)</script>"


def test_collect_env_without_header_is_rejected() -> None:
    with pytest.raises(CollectEnvError):
        parse_collect_env("hello\nworld\n")


# --------------------------------------------------------------------------------------------
# nvidia-smi table


@pytest.mark.parametrize(
    ("name", "driver", "cuda", "gpus"),
    [
        ("smi-table-470-a10g.txt", "470.256.02", "11.4", ["NVIDIA A10G"]),
        ("smi-table-525-a100-sxm-truncated-names.txt", "525.85.12", "12.0",
         ["NVIDIA A100-SXM...", "NVIDIA A100-SXM..."]),
        ("smi-table-525-grid-a100-vgpu.txt", "525.60.13", "12.0", ["GRID A100-40C"] * 2),
        ("smi-table-535-a10g.txt", "535.247.01", "12.2", ["NVIDIA A10G"]),
        ("smi-table-550-tesla-p4.txt", "550.135", "12.4", ["Tesla P4"]),
        ("smi-table-580-2x-a100-sxm4-40gb.txt", "580.126.09", "13.0",
         ["NVIDIA A100-SXM4-40GB"] * 2),
    ],
)  # fmt: skip
def test_smi_table_header_and_names(name: str, driver: str, cuda: str, gpus: list[str]) -> None:
    profile = parse_nvidia_smi_table(load(name)).profile
    assert profile.nvml.status is NvmlStatus.OK
    assert profile.nvml.driver_version.value == driver
    assert profile.nvml.cuda_driver_version.value == cuda
    assert profile.nvml.device_count.value == len(gpus)
    assert [g.name.value for g in profile.gpus] == gpus
    assert [g.index for g in profile.gpus] == list(range(len(gpus)))
    assert all(g.vendor == "nvidia" and g.backend == "cuda" for g in profile.gpus)


def test_smi_table_classic_row_values() -> None:
    (gpu,) = parse_nvidia_smi_table(load("smi-table-470-a10g.txt")).profile.gpus
    assert gpu.pci_bus_id.value == "00000000:00:1E.0"
    assert gpu.persistence_mode.value is True
    assert gpu.ecc_enabled.value is True
    assert gpu.temperature_c.value == 25
    assert gpu.power_draw_watts.value == 9.0
    assert gpu.power_limit_watts.value == 300.0
    assert gpu.vram_used_bytes.value == 0
    assert gpu.vram_total_bytes.value == 22731 * MIB
    assert gpu.utilization_percent.value == 0
    assert gpu.mig_enabled.value is None
    assert gpu.mig_enabled.reason == "nvidia-smi reports N/A for MIG"
    assert gpu.uuid.reason == "not in the nvidia-smi table"


def test_smi_table_new_layout_row_values() -> None:
    profile = parse_nvidia_smi_table(load("smi-table-580-2x-a100-sxm4-40gb.txt")).profile
    second = profile.gpus[1]
    assert second.pci_bus_id.value == "00000000:10:1D.0"
    assert second.temperature_c.value == 37
    assert second.power_draw_watts.value == 66.0
    assert second.power_limit_watts.value == 400.0
    assert second.vram_used_bytes.value == 602 * MIB
    assert second.vram_total_bytes.value == 40960 * MIB
    assert second.utilization_percent.value == 7
    assert second.mig_enabled.value is False
    p4 = parse_nvidia_smi_table(load("smi-table-550-tesla-p4.txt")).profile.gpus[0]
    assert p4.ecc_enabled.value is False
    assert p4.persistence_mode.value is False
    assert p4.vram_total_bytes.value == 8192 * MIB


def test_smi_table_na_values_stay_unknown() -> None:
    gpu = parse_nvidia_smi_table(load("smi-table-525-grid-a100-vgpu.txt")).profile.gpus[0]
    assert gpu.temperature_c.value is None
    assert gpu.temperature_c.reason == "nvidia-smi reports N/A for temperature"
    assert gpu.power_limit_watts.value is None
    assert gpu.vram_total_bytes.value == 40960 * MIB


def test_smi_table_hostile_name_is_data() -> None:
    text = load("smi-table-470-a10g.txt").replace("NVIDIA A10G      ", "<script>x</script>")
    (gpu,) = parse_nvidia_smi_table(text).profile.gpus
    assert gpu.name.value == "<script>x</script>"


def test_smi_table_without_banner_is_rejected() -> None:
    with pytest.raises(NvidiaSmiTableError):
        parse_nvidia_smi_table("| 0 GPU |\n")


# --------------------------------------------------------------------------------------------
# detection and the import envelope


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in IMPORT.iterdir()
        if p.suffix in (".txt", ".json") and p.name not in refused(IMPORT / "expected.toml")
    ),
)
def test_every_recording_imports_with_envelope(name: str) -> None:
    """The envelope of every import (which format each paste is: expected.toml)."""
    profile = import_file(IMPORT / name)
    kind = detect_format(load(name))
    assert kind is not None
    assert profile.tool.version == __version__
    assert profile.created_utc.endswith("Z")
    if profile.host.hostname.value is None:
        assert profile.host.hostname.reason == f"imported from {kind}"
    (run,) = profile.diagnostics.probes
    assert run.name == "import"
    assert kind in (run.message or "")
    assert profile.imported is not None and profile.imported.files[0].format == kind
    if not profile.memory.total_bytes.known:
        assert profile.memory.total_bytes.reason == f"not in {kind}"
    # The profile is valid JSON of the current schema.
    assert Profile.model_validate_json(profile.model_dump_json()) == profile


@pytest.mark.parametrize("path", sorted((FIXTURES / "nvidia-smi").glob("*.xml")), ids=str)
def test_nvidia_smi_xml_is_detected(path: Path) -> None:
    profile = import_file(path)
    assert detect_format(path.read_text(encoding="utf-8")) == "nvidia-smi -q -x XML"
    assert profile.gpus
    assert all(g.name.source is Source.NVIDIA_SMI for g in profile.gpus)
    assert profile.host.hostname.reason == "imported from nvidia-smi -q -x XML"


def test_saved_profile_is_detected() -> None:
    path = FIXTURES / "profiles" / "v1-cpu-only.json"
    profile = import_file(path)
    assert detect_format(path.read_text(encoding="utf-8")) == "hwadvisor profile"
    assert profile.cpu.model_name.value == "AMD EPYC"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("  \n\n")
    with pytest.raises(InputError, match="empty file"):
        import_file(path)


@pytest.mark.parametrize(
    "raw", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\xff\xfe\x00\x01binary", b"PyTorch\x00\x01"]
)
def test_binary_file(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(raw)
    with pytest.raises(InputError, match="not text") as err:
        import_file(path)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be read"):
        import_file(tmp_path / "nope.txt")


def test_random_text_is_not_recognised() -> None:
    with pytest.raises(InputError) as err:
        import_text("The quick brown fox\njumps over the lazy dog\n", "fox.txt")
    message = str(err.value)
    assert message.startswith(f"fox.txt: {UNKNOWN_FORMAT} (tried collect_env output, ")
    assert "lscpu output" in message and "\n" not in message


@pytest.mark.parametrize(
    "where",
    [
        "<fb_memory_usage",  # inside a tag's name
        "<clocks>",  # right after a whole tag
        "</temperature>",  # inside a closing tag
        "half",
    ],
)
def test_truncated_xml_keeps_what_was_read_up_to_the_cut(where: str) -> None:
    """A cut anywhere, mid-tag included: the GPU and driver read so far, flagged as cut."""
    text = (FIXTURES / "nvidia-smi" / "telegraf-geforce-rtx-3080.xml").read_text(encoding="utf-8")
    end = len(text) // 2 if where == "half" else text.index(where) + (len(where) // 2)
    profile = import_text(text[:end], "cut.xml")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA GeForce RTX 3080"]
    assert profile.nvml.driver_version.value == "595.58.03"
    assert profile.imported is not None
    said = profile.imported.files[0].truncated or ""
    assert "stops before its end" in said or "ends before its memory usage" in said


def test_xml_malformed_before_its_end_is_one_line_error() -> None:
    text = (FIXTURES / "nvidia-smi" / "telegraf-geforce-rtx-3080.xml").read_text(encoding="utf-8")
    broken = text.replace("</product_name>", "</product_nam>", 1)
    with pytest.raises(InputError, match="unreadable nvidia-smi -q -x XML") as err:
        import_text(broken, "broken.xml")
    assert "\n" not in str(err.value) and "mismatched tag" in str(err.value)


def test_truncated_table_keeps_what_parses() -> None:
    text = load("smi-table-580-2x-a100-sxm4-40gb.txt")
    cut = text[: text.index("\n", text.index("|   1  NVIDIA")) + 1]  # GPU 1's first row only
    profile = import_text(cut, "cut.txt")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA A100-SXM4-40GB"] * 2
    assert profile.gpus[0].temperature_c.value == 41
    assert profile.gpus[1].temperature_c.value is None


def test_mixed_file_reads_the_collect_env_part() -> None:
    text = load("smi-table-535-a10g.txt") + "\n" + load("collect_env-linux-cpu-only-ryzen.txt")
    assert detect_format(text) == "collect_env output"
    profile = import_text(text, "mixed.txt")
    assert profile.frameworks.torch.version.value == "2.6.0+cpu"


def test_xml_after_a_prompt_line() -> None:
    xml = (FIXTURES / "nvidia-smi" / "telegraf-geforce-rtx-3080.xml").read_text(encoding="utf-8")
    profile = import_text("$ nvidia-smi -q -x\n" + xml, "prompt.xml")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA GeForce RTX 3080"]


def test_invalid_profile_json_is_input_error() -> None:
    with pytest.raises(InputError, match="not an hwadvisor profile"):
        import_text('{"hello": 1}', "x.json")


def test_import_loads_no_torch() -> None:
    # A fresh interpreter: this test session may have imported torch for other tests.
    code = (
        "import sys; from pathlib import Path; from hwadvisor.importers.detect import import_file; "
        f"import_file(Path({str(IMPORT / 'collect_env-linux-cuda-4x-a100-sxm4-80gb.txt')!r})); "
        "assert 'torch' not in sys.modules and 'pynvml' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
