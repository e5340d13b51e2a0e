"""The importer registry: one module and one line per format, names unique, every format with
an example command, and text no format takes told what it comes closest to."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hwadvisor.errors import InputError
from hwadvisor.importers import registry
from hwadvisor.importers.base import Sample
from hwadvisor.importers.detect import UNKNOWN_FORMAT, detect_format, import_text
from hwadvisor.model.facts import Source


def test_every_module_registers_one_named_format() -> None:
    found = registry.formats()
    assert len(found) == len(registry._MODULES)
    names = [f.name for f in found]
    assert len(set(names)) == len(names)
    for entry in found:
        assert isinstance(entry.source, Source)
        assert entry.example, entry.name
        assert 0 < entry.rank <= 100
        assert registry.by_name(entry.name) is entry


def test_the_first_taker_wins_in_registry_order() -> None:
    text = "Architecture: x86_64\nCPU(s): 4\nModel name: Intel(R) Xeon(R)\n"
    assert registry.detect(Sample(text)) is registry.by_name("lscpu output")
    assert registry.detect(Sample("hello\n")) is None


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (
            "==============NVSMI LOG==============\n\nDriver Version : 535.129.03\n"
            "    Product Name : NVIDIA H100\n",
            None,  # the banner is enough to read it (the driver line alone)
        ),
        (
            "Driver Version                            : 535.129.03\n"
            "    Product Name                          : NVIDIA H100 80GB HBM3\n",
            "looks like nvidia-smi -q text but has no 'Attached GPUs' line or GPU section",
        ),
        (
            "PyTorch version: 2.1.0\nsomething else: 1\n",
            "looks like collect_env output but has only its 'PyTorch version:' line",
        ),
        (
            "Architecture:        x86_64\nByte Order:          Little Endian\n",
            "looks like lscpu output but has no 'CPU(s):' or 'Model name:' line",
        ),
    ],
)
def test_unknown_text_says_what_it_comes_closest_to(text: str, hint: str | None) -> None:
    if hint is None:
        assert detect_format(text) is not None
        return
    with pytest.raises(InputError) as err:
        import_text(text, "p.txt")
    message = str(err.value)
    assert message.startswith(f"p.txt: {UNKNOWN_FORMAT} (tried ")
    assert f"; {hint}; paste the whole output of `" in message
    assert "\n" not in message


def test_detection_is_linear_in_the_input() -> None:
    """1 MB of log text with no format in it: every sniffer runs, none scans it quadratically
    (benchmarks/import_speed.py prints the figures; this only guards against a collapse)."""
    line = "2026-11-23 10:02:03 INFO worker 7: step 1234 loss 0.123 lr 3e-4 | tokens/s 9876\n"
    text = line * (1_000_000 // len(line))
    start = time.perf_counter()
    assert detect_format(text) is None
    assert time.perf_counter() - start < 1.0


def test_the_import_page_lists_every_format_with_its_command() -> None:
    """docs/import.md (linked from the README, which no longer holds the table)."""
    page = Path(__file__).parent.parent / "docs" / "import.md"
    if not page.exists():
        pytest.skip("docs/import.md is written with the importers' documentation")
    text = page.read_text(encoding="utf-8")
    for entry in registry.formats():
        assert f"| {entry.name} | `{entry.example}`" in text, entry.name


@pytest.mark.parametrize(
    "unit",
    ["| 0 ", "GPU0 ", "GPU 0: x (UUID: ", "GPU[0] ", "card0,", '"card0": {', "=== x",
     " " * 50 + "x\n", "ROCm System Management ", "x....", "Architecture: ",
     "processor\t: 0\n", "|    0  ", "NV12\t", "[gh]$ gpustat --json\n"],
)  # fmt: skip
def test_no_sniffer_backtracks_on_repeated_text(unit: str) -> None:
    """64 KiB of one token repeated (one line, or many): each sniffer and hint stays linear
    (a nested lazy pattern once took a minute here)."""
    sample = Sample(unit * (65536 // len(unit)))
    for entry in registry.formats():
        for check in (entry.sniff, entry.near):
            if check is None:
                continue
            start = time.perf_counter()
            check(sample)
            assert time.perf_counter() - start < 0.5, (entry.name, unit)


def test_a_prompt_that_looks_like_an_array_does_not_hide_the_json() -> None:
    sample = Sample('[gh]$ gpustat --json\n{"hostname": "node7", "gpus": []}\n')
    assert sample.json == {"hostname": "node7", "gpus": []}
    cut = Sample('{"gpus": [{"index": 0, "name": "NVIDIA A100"}, {"index": 1, "na')
    # Read up to the cut: the second GPU keeps what was complete of it (its index).
    assert cut.json == {"gpus": [{"index": 0, "name": "NVIDIA A100"}, {"index": 1}]}
    assert cut.json_cut is not None and Sample('{"a": 1}').json_cut is None
