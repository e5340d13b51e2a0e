"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.errors import InputError
from hwadvisor.importers.detect import SMI_CSV, detect_format, import_text

IMPORT = Path(__file__).parent / "fixtures" / "import"


def _read(name: str):  # type: ignore[no-untyped-def]
    text = (IMPORT / name).read_text(encoding="utf-8")
    assert detect_format(text) == SMI_CSV
    return import_text(text, name)


def test_noheader_nounits_named_by_the_pasted_command_line() -> None:
    profile = _read("smi-csv-noheader-nounits-rtx2080.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "GeForce RTX 2080"
    assert gpu.vram_total_bytes.value == 7979 * 1024**2  # "7979" is MiB: the unit is put back
    assert gpu.uuid.value == "GPU-22b2c6ac-2d49-4863-197c-9c469071178a"
    assert (gpu.power_limit_watts.value, gpu.power_draw_watts.value) == (200.0, 176.98)
    assert gpu.temperature_c.value == 45 and gpu.pcie_width.value == 8
    assert profile.nvml.driver_version.value == "440.64"


def test_with_a_header_every_named_column() -> None:
    profile = _read("smi-csv-header-2x-a100-constructed.txt")
    first, second = profile.gpus
    assert first.pci_bus_id.value == "00000000:07:00.0"
    assert first.vram_total_bytes.value == 81920 * 1024**2
    assert first.compute_capability.value == "8.0"
    assert (first.mig_enabled.value, second.mig_enabled.value) == (False, True)
    assert first.pcie_width_max.value == 16


@pytest.mark.parametrize(
    "text",
    [
        "NVIDIA GeForce RTX 4090, 24564 MiB, 00000000:01:00.0\n",  # noheader, recognised
        "Tesla T4, 15360 MiB\nTesla T4, 15360 MiB\n",
    ],
)
def test_noheader_columns_recognised_by_content(text: str) -> None:
    profile = import_text(text, "csv")
    assert profile.gpus and all(g.name.value for g in profile.gpus)
    assert all(g.vram_total_bytes.value for g in profile.gpus)


def test_a_cut_row_is_left_out_not_misread() -> None:
    text = "name, memory.total [MiB]\nTesla T4, 15360 MiB\nTesla T4\n"
    profile = import_text(text, "csv")
    assert len(profile.gpus) == 1


def test_a_csv_without_gpus_is_not_taken_for_one() -> None:
    with pytest.raises(InputError, match="not a recognised format"):
        import_text("a, b, c\n1, 2, 3\n", "numbers.csv")
