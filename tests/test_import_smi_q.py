"""`nvidia-smi -q` as plain text (issue: the most pasted GPU description was "not a recognised
format"): real pastes from public issues, read as pasted, and cut anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.importers.detect import SMI_Q, detect_format, import_text
from hwadvisor.model.facts import Source

IMPORT = Path(__file__).parent / "fixtures" / "import"

#: file → (GPU name, bus id, driver, CUDA, timestamp, attached GPUs)
REAL = {
    "smi-q-510-a10g.txt": (
        "NVIDIA A10G", "00000000:00:1E.0", "510.85.02", "11.6", "2022-11-15T01:06:47Z", 1
    ),
    "smi-q-470-a100-sxm4-80gb.txt": (
        "NVIDIA A100-SXM4-80GB", "00000000:94:00.0", "470.103.01", "11.4",
        "2023-01-04T19:10:30Z", 1,
    ),
    "smi-q-396-gtx1080.txt": (
        "GeForce GTX 1080", "00000000:01:00.0", "396.54", None, "2019-04-14T18:55:20Z", 1
    ),
    "smi-q-390-8x-gtx1080ti.txt": (
        "GeForce GTX 1080 Ti", "00000000:04:00.0", "390.48", None, "2018-06-07T10:21:52Z", 8
    ),
    "smi-q-396-k80-azure.txt": (
        "Tesla K80", "3E3F8E05:00:00.0", "396.37", None, "2018-09-01T06:15:25Z", 1
    ),
}  # fmt: skip
CONSTRUCTED = IMPORT / "smi-q-535-2x-h100-constructed.txt"


def _text(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_pastes_are_read(name: str) -> None:
    gpu_name, bus, driver, cuda, when, attached = REAL[name]
    text = _text(name)
    assert detect_format(text) == SMI_Q
    profile = import_text(text, name)
    assert profile.created_utc == when  # the source's time, not the import's
    assert profile.nvml.driver_version.value == driver
    assert profile.nvml.cuda_driver_version.value == cuda
    assert profile.nvml.device_count.value == attached
    # The GPUs the report counts but the paste does not show are listed, facts unknown.
    assert len(profile.gpus) == attached
    gpu, *rest = profile.gpus
    assert all(other.name.reason == "not in the pasted text" for other in rest)
    assert gpu.name.value == gpu_name
    assert gpu.pci_bus_id.value == bus
    assert gpu.uuid.value and gpu.uuid.value.startswith("GPU-")
    # Every one of these pastes stops before the memory section: the catalog fills it in.
    assert gpu.vram_total_bytes.source == Source.CATALOG and gpu.vram_total_bytes.value
    assert "input-truncated" in {f.id for f in profile.findings}


def test_the_cut_says_how_much_is_missing() -> None:
    profile = import_text(_text("smi-q-390-8x-gtx1080ti.txt"), "x")
    (finding,) = [f for f in profile.findings if f.id == "input-truncated"]
    assert "1 of the 8 attached GPUs" in finding.detail


def test_a_whole_report_gives_every_fact_and_no_mig_slice_as_a_gpu() -> None:
    profile = import_text(CONSTRUCTED.read_text(encoding="utf-8"), "h100")
    assert profile.nvml.device_count.value == 2
    first, second = profile.gpus
    assert first.vram_total_bytes.value == 81559 * 1024**2
    assert first.vram_total_bytes.source == Source.NVIDIA_SMI
    assert first.power_limit_watts.value == 700.0 and first.power_draw_watts.value == 71.3
    assert first.sm_clock_max_mhz.value == 1980 and first.memory_clock_mhz.value == 2619
    assert (first.pcie_generation.value, first.pcie_width.value) == (5, 16)
    assert first.temperature_c.value == 31 and first.utilization_percent.value == 0
    assert first.ecc_enabled.value is True and first.mig_enabled.value is True
    assert first.architecture.value == "Hopper" and first.serial.value == "1650123456789"
    # The MIG slices are the first GPU's instances, never GPUs; their memory is theirs.
    assert [m.memory_total_bytes.value for m in first.mig_instances] == [40192 * 1024**2] * 2
    assert second.pci_bus_id.value == "00000000:2A:00.0" and second.mig_enabled.value is False
    assert "input-truncated" not in {f.id for f in profile.findings}


@pytest.mark.parametrize(
    "wrap",
    [
        lambda t: "\n".join("> " + line for line in t.splitlines()),  # a quoted reply
        lambda t: t.replace("\n", "\r\n"),  # Windows line ends
        lambda t: "```text\n" + t + "\n```\nthanks for looking!\n",  # fenced, with a note
        lambda t: "$ nvidia-smi -q\n" + t,  # the prompt line
    ],
)
def test_paste_noise_is_taken_off(wrap) -> None:  # type: ignore[no-untyped-def]
    plain = import_text(CONSTRUCTED.read_text(encoding="utf-8"), "a")
    noisy = import_text(wrap(CONSTRUCTED.read_text(encoding="utf-8")), "b")
    assert [g.model_dump() for g in noisy.gpus] == [g.model_dump() for g in plain.gpus]


@given(st.integers(min_value=8, max_value=200))
def test_cut_after_any_line_is_read_up_to_the_cut(keep: int) -> None:
    lines = CONSTRUCTED.read_text(encoding="utf-8").splitlines()
    text = "\n".join(lines[:keep])
    profile = import_text(text, "cut")
    whole = import_text("\n".join(lines), "whole")
    assert profile.nvml.driver_version.value == "535.129.03"
    assert len(profile.gpus) == 2  # "Attached GPUs: 2", shown or not
    shown = [g for g in profile.gpus if g.name.reason != "not in the pasted text"]
    cut = "input-truncated" in {f.id for f in profile.findings}
    if len(shown) < 2:
        assert cut  # fewer GPUs than "Attached GPUs: 2" says so
    # What was read before the cut is what the whole report says.
    for part, full in zip(shown, whole.gpus, strict=False):
        assert part.pci_bus_id.value == full.pci_bus_id.value  # from the section's header
        assert part.name.value in (None, full.name.value)  # unknown when cut before it


def test_other_formats_are_not_taken_for_it() -> None:
    assert detect_format(_text("collect_env-linux-cuda-4x-a100-sxm4-80gb.txt")) != SMI_Q
    assert detect_format(_text("smi-table-535-a10g.txt")) != SMI_Q


def test_paste_noise_is_taken_off_for_every_format() -> None:
    # A quoted reply holding collect_env output, and a fenced --query-gpu table.
    collect_env = (IMPORT / "collect_env-linux-cuda-4x-a100-sxm4-80gb.txt").read_text("utf-8")
    quoted = "\n".join("> " + line for line in collect_env.splitlines())
    assert [g.name.value for g in import_text(quoted, "q").gpus] == [
        g.name.value for g in import_text(collect_env, "plain").gpus
    ]
    fenced = "```csv\nname, memory.total [MiB]\nTesla T4, 15360 MiB\n```\n"
    (gpu,) = import_text(fenced, "csv").gpus
    assert gpu.name.value == "Tesla T4"
