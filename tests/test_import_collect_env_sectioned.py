"""vLLM's and SGLang's sectioned collect_env (``==== System Info ====`` banners, aligned
``Key   : value`` lines), which thousands of inference-engine bug reports carry."""

from __future__ import annotations

from pathlib import Path

from hwadvisor.importers.collect_env import unsection
from hwadvisor.importers.detect import COLLECT_ENV, detect_format, import_text

IMPORT = Path(__file__).parent / "fixtures" / "import"


def _text(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


def test_a_real_sectioned_paste_cut_short() -> None:
    text = _text("collect_env-vllm-sectioned-rhel8.txt")
    assert detect_format(text) == COLLECT_ENV
    profile = import_text(text, "vllm")
    torch = profile.frameworks.torch
    assert torch.version.value == "2.5.1+cu124"
    assert profile.platform.distribution.value is not None
    assert "Red Hat" in profile.platform.distribution.value


def test_a_whole_sectioned_report() -> None:
    profile = import_text(_text("collect_env-vllm-sectioned-2x-h100-constructed.txt"), "vllm")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert profile.nvml.driver_version.value == "550.127.05"
    assert profile.frameworks.torch.cuda_available.value is True
    cpu = profile.cpu
    assert cpu.model_name.value == "Intel(R) Xeon(R) Platinum 8462Y+"
    assert (cpu.physical_cores.value, cpu.logical_cores.value) == (32, 64)
    assert cpu.isa_features.value is not None and "amx_bf16" in cpu.isa_features.value
    # The GPU topology matrix and the environment variables after the CPU section are not
    # taken for lscpu lines or header facts.
    assert cpu.max_frequency_mhz.value == 4100.0
    assert all(g.vram_total_bytes.value for g in profile.gpus)  # from the catalog


def test_torch_layout_is_left_as_it_is() -> None:
    text = _text("collect_env-linux-cuda-4x-a100-sxm4-80gb.txt")
    assert unsection(text) == text
