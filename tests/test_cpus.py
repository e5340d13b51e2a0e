"""The CPU catalog (``cpus.toml``) and ``advise --serve --assume-cpu``: each row's bandwidth is
its bus times its memory's speed, every word people type for a chip finds that chip, the RAM
and memory speed typed with it are read, and the answer sizes it as the CPU it is."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hwadvisor.advise.serving import build_request, serve_advice
from hwadvisor.catalog.cpus import all_cpus, find_cpu, parse_cpus, resolve_cpu
from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.cli import main
from hwadvisor.errors import UsageError

ROW = """[[cpu]]
name = "{name}"
match = [{match}]
segment = "desktop"
vendor = "amd"
cores = 16
threads = 32
memory = "DDR5-5200"
bus_bits = 128
bandwidth_gbs = {bandwidth}
fp32_tflops = 2.9
flops_note = "16 x 5.7 x 32"
memory_gb = 32
source = "s"
"""


def test_every_row_is_consistent_and_found_by_each_word_people_type_for_it() -> None:
    rows = all_cpus()
    assert len(rows) >= 30
    for row in rows:
        # a core does 8 to 64 FP32 FLOPs a clock at 1 to 6 GHz
        assert row.cores * 1.0 * 8 / 1000 <= row.fp32_tflops <= row.cores * 6.0 * 64 / 1000, row
        assert row.threads >= row.cores and row.memory_gb >= 1 and row.source
        for word in (*row.match, row.name):
            assert find_cpu(word) == row, word
            assert find_cpu(f"{word} 64GB") == row, word
            # a model number is never read as RAM ("8700G" is not 8,700 GB)
            assert resolve_cpu(word).memory_gb == row.memory_gb, word
            assert resolve_cpu(f"{word} 64GB").memory_gb == 64, word
    vendors = {row.vendor for row in rows}
    assert {"amd", "intel"} <= vendors and len(vendors) >= 3


@pytest.mark.parametrize(
    ("bandwidth", "match", "error"),
    [(90.0, '"7950X"', "is not 128 bits x 5200 MT/s"), (83.2, '"X"', None)],
)
def test_a_bad_row_is_refused_with_one_line(
    bandwidth: float, match: str, error: str | None
) -> None:
    text = ROW.format(name="A", match=match, bandwidth=bandwidth)
    if error is None:  # two rows typed the same way
        text += ROW.format(name="B", match=match, bandwidth=bandwidth)
        error = "names both A and B"
    with pytest.raises(CatalogError) as err:
        parse_cpus(text)
    assert error in str(err.value) and "\n" not in str(err.value)


def test_the_ram_and_memory_speed_typed_with_a_chip_are_read() -> None:
    row = find_cpu("7950X")
    assert row is not None
    plain = resolve_cpu("Ryzen 9 7950X")
    assert plain.memory_gb == row.memory_gb and plain.bandwidth_gbs == row.bandwidth_gbs
    assert plain.note is not None and "RAM assumed" in plain.note
    named = resolve_cpu("Ryzen 9 7950X 64GB DDR5-6000")
    assert named.memory_gb == 64
    assert named.bandwidth_gbs == pytest.approx(row.bus_bits / 8 * 6000 / 1000)
    assert named.note is not None and "DDR5-6000 as named" in named.note
    with pytest.raises(UsageError) as err:
        resolve_cpu("Ryzen 9 9999Z")
    assert "no such CPU" in str(err.value) and "hwadvisor cpus" in str(err.value)


def test_an_assumed_cpu_is_sized_as_a_cpu_at_its_memorys_speed() -> None:
    slow = serve_advice(None, build_request("llama-3.1-8b", assume_cpu=("7950X 64GB",)))
    fast = serve_advice(None, build_request("llama-3.1-8b", assume_cpu=("7950X 64GB DDR5-6400",)))
    one = next(e for e in slow.estimates if e.origin == "assumed")
    two = next(e for e in fast.estimates if e.origin == "assumed")
    assert one.gpus == 0 and one.scenario_class == 1 and "64 GB RAM" in one.hardware
    assert one.purchase_cost is None and one.hourly_cost is None  # no price book prices it
    assert one.fits_memory and "cpu" not in one.hardware.casefold().split()
    # decode at batch 1 reads the weights at the memory's pace (less a fixed time a step)
    assert 1.1 < (two.decode_tok_s or 0) / (one.decode_tok_s or 1) <= 6400 / 5200 + 1e-9
    small = serve_advice(None, build_request("llama-3.1-8b", assume_cpu=("7950X 8GB",)))
    assert not next(e for e in small.estimates if e.origin == "assumed").fits_memory


def test_assume_cpu_on_the_command_line(capsys: Any) -> None:
    argv = ["advise", "--serve", "llama-3.2-1b", "--assume-cpu", "Raspberry Pi 5 8GB"]
    assert main([*argv, "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assumed = [e for e in doc["inference"]["estimates"] if e["origin"] == "assumed"]
    assert len(assumed) == 1 and "Raspberry Pi 5" in assumed[0]["hardware"]
    # MLX needs Apple silicon; --assume-cpu without --serve is a serving option
    for extra in (["--engine", "mlx", "--quant", "4bit"],):
        assert main([*argv, *extra]) == 2
        assert "mlx runs on Apple silicon only" in capsys.readouterr().err
    assert main(["advise", "--assume-cpu", "7950X"]) == 2
    assert "give --serve MODEL too" in capsys.readouterr().err
    # a CPU typed as a GPU is pointed to --assume-cpu
    assert main(["advise", "--serve", "llama-3.2-1b", "--assume-gpu", "Ryzen 9 7950X"]) == 2
    assert "is a CPU: --assume-cpu" in capsys.readouterr().err


def test_the_cpus_command_lists_and_filters(capsys: Any) -> None:
    assert main(["cpus", "epyc", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all("EPYC" in r["name"] for r in rows)
    assert main(["cpus", "no-such-chip"]) == 2
