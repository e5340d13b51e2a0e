"""The one loader of the data files (hwadvisor.catalog.schema): every file kind refuses each
sort of bad value with ONE line naming the file, the entry and the key, raised as that file's
own error class; every packaged file loads."""

from __future__ import annotations

import math
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.advise import RulesError, load_prices, load_rules
from hwadvisor.calibration import CalibrationError, load_calibration
from hwadvisor.catalog import CatalogError, find_gpu_peak, load_catalog
from hwadvisor.catalog.drivers import load_driver_branches
from hwadvisor.catalog.schema import DataModel, OptPositive, Text, load_table
from hwadvisor.errors import InputError
from hwadvisor.memory import (
    MemoryModelError,
    load_memory_cases,
    lora_trainable_parameters,
    spec_from_mapping,
)
from hwadvisor.workloads import WorkloadError, load_workloads

# --------------------------------------------------------------------------------------------
# Helpers


def _packaged(name: str) -> str:
    return resources.files("hwadvisor.catalog").joinpath(name).read_text(encoding="utf-8")


def _refused(
    tmp_path: Path,
    load: Callable[[Path], Any],
    text: str,
    error: type[Exception],
    *parts: str,
) -> str:
    """Load ``text`` from a file; it must fail with ``error`` in one line that starts with the
    file's path and holds every one of ``parts``."""
    path = tmp_path / "data.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error) as caught:
        load(path)
    assert type(caught.value) is error
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message
    for part in parts:
        assert part in message, message
    return message


def _change(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --------------------------------------------------------------------------------------------
# The loader itself


class _Row(DataModel):
    name: Text
    size: OptPositive = None


def test_the_loader_names_where_key_and_value() -> None:
    with pytest.raises(KeyError) as caught:
        load_table(_Row, {"name": "x", "size": -1}, "here", KeyError)
    assert caught.value.args[0] == "here: key 'size' must be a positive number, got -1"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": "x", "sise": 1}, "unknown key 'sise' (did you mean 'size'?)"),
        ({"size": 1}, "missing key 'name'"),
        ({"name": ""}, "key 'name' must be non-empty text, got ''"),
        ({"name": 3}, "key 'name' must be non-empty text, got 3"),
        ({"name": "x", "size": True}, "key 'size' must be a positive number, got true"),
        ({"name": "x", "size": "1"}, "key 'size' must be a positive number, got '1'"),
        ({"name": "x", "size": math.nan}, "key 'size' must be a positive number, got nan"),
        ({"name": "x", "size": math.inf}, "key 'size' must be a positive number, got inf"),
        ({"name": "x", "size": 10**400}, "key 'size' must be a positive number, got 1000"),
        ("x", "must be a table, got 'x'"),
    ],
)
def test_each_sort_of_bad_value_reads_as_one_line(data: object, expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        load_table(_Row, data, "here", ValueError)
    assert str(caught.value).startswith(f"here: {expected}")
    assert "\n" not in str(caught.value)


# --------------------------------------------------------------------------------------------
# gpus.toml

_GPUS = """
[[gpu]]
name = "First"
match = ["First"]
vendor = "nvidia"
class = "consumer"
fp32_tflops = 10
source = "a datasheet"

[[gpu]]
name = "Second GPU"
match = ["Second GPU", "Second"]
vendor = "amd"
class = "datacenter"
memory_gb = 64
fp16_tflops = 100
bandwidth_gbs = 1000
source = "another datasheet"
"""


def _gpus(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    return _refused(tmp_path, load_catalog, _change(_GPUS, old, new), CatalogError, *parts)


def test_a_gpu_row_error_has_the_documented_form(tmp_path: Path) -> None:
    message = _gpus(tmp_path, "fp16_tflops = 100", "fp16_tflops = -1")
    assert message.endswith(
        ": [[gpu]] entry 2 ('Second GPU'): key 'fp16_tflops' must be a positive number, got -1"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("fp16_tflops", "fp16_tflop", "unknown key 'fp16_tflop' (did you mean 'fp16_tflops'?)"),
        ('vendor = "amd"\n', "", "missing key 'vendor'"),
        ("= 100", '= "100"', "key 'fp16_tflops' must be a positive number, got '100'"),
        ("= 100", "= true", "key 'fp16_tflops' must be a positive number, got true"),
        ("= 100", "= nan", "key 'fp16_tflops' must be a positive number, got nan"),
        ("= 100", "= inf", "key 'fp16_tflops' must be a positive number, got inf"),
        ("= 100", "= -inf", "key 'fp16_tflops' must be a positive number, got -inf"),
        ("= 100", "= 0", "key 'fp16_tflops' must be a positive number, got 0"),
        ('"datacenter"', '"server"', "key 'class' must be one of datacenter, workstation, "),
        ('["Second GPU", "Second"]', '["Second GPU", ""]', "key 'match' must be a non-empty list"),
        ('"another datasheet"', "1", "key 'source' must be non-empty text, got 1"),
    ],
)
def test_bad_gpu_rows_name_file_entry_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    _gpus(tmp_path, old, new, "[[gpu]] entry 2 ('Second GPU'): ", expected)


def test_gpu_file_level_rules(tmp_path: Path) -> None:
    _gpus(tmp_path, 'name = "Second GPU"', 'name = "First"', "GPU 'First' appears more than once")
    _gpus(tmp_path, "[[gpu]]", "gpus = 1\n[[gpu]]", "unknown top-level key 'gpus'")
    for text in ("", "# nothing\n"):
        _refused(tmp_path, load_catalog, text, CatalogError, "no [[gpu]] tables")


def test_a_new_gpu_is_one_catalog_row(tmp_path: Path) -> None:
    assert all(row.name != "Zephyr Z100" for row in load_catalog())
    row = """
[[gpu]]
name = "Zephyr Z100"
match = ["Zephyr Z100"]
vendor = "nvidia"
class = "datacenter"
memory_gb = 96
bf16_tflops = 1234.5
bandwidth_gbs = 4000
source = "a future datasheet"
"""
    path = tmp_path / "gpus.toml"
    path.write_text(_packaged("gpus.toml") + row, encoding="utf-8")
    rows = load_catalog(path)
    assert len(rows) == len(load_catalog()) + 1
    found = find_gpu_peak("NVIDIA Zephyr Z100", catalog=rows)
    assert found is not None and found.name == "Zephyr Z100"
    assert found.bf16_tflops == 1234.5 and found.gpu_class == "datacenter"


# --------------------------------------------------------------------------------------------
# workloads.toml

_WORKLOADS = """
[bytes_per_parameter]
fp32 = 16
bf16 = 18

[[workload]]
name = "tiny-cnn"
description = "a small conv net"
kind = "conv"
parameters = 1_000_000
flops_per_sample = 1e9
samples = 10_000
epochs = 2
batch_size = 32
precision = "fp32"
source = "made up"

[[workload]]
name = "tiny-lm"
description = "a small language model"
kind = "transformer"
parameters = 10_000_000
flops_per_token = 6e7
tokens = 1_000_000
sequence_length = 256
layers = 4
hidden = 256
heads = 4
epochs = 1
precision = "bf16"
source = "made up"

[workload.efficiency]
cpu = 0.2
datacenter-gpu = 0.5
"""


def _workloads(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    text = _change(_WORKLOADS, old, new)
    return _refused(tmp_path, load_workloads, text, WorkloadError, *parts)


def test_a_good_workloads_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "workloads.toml"
    path.write_text(_WORKLOADS, encoding="utf-8")
    cnn, lm = load_workloads(path)
    assert (cnn.name, cnn.bytes_per_parameter, cnn.batch_size) == ("tiny-cnn", 16.0, 32)
    assert (lm.bytes_per_parameter, lm.has_shape) == (18.0, True)
    assert lm.efficiency == (("cpu", 0.2), ("datacenter-gpu", 0.5))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("heads = 4", "head = 4", "unknown key 'head' (did you mean 'heads'?)"),
        ('source = "made up"\n\n[workload', "\n[workload", "missing key 'source'"),
        ("layers = 4", 'layers = "4"', "key 'layers' must be a positive whole number, got '4'"),
        ("layers = 4", "layers = 4.5", "key 'layers' must be a positive whole number, got 4.5"),
        ("epochs = 1", "epochs = true", "key 'epochs' must be a positive number, got true"),
        ("epochs = 1", "epochs = nan", "key 'epochs' must be a positive number, got nan"),
        ("tokens = 1_000_000", "tokens = inf", "key 'tokens' must be a positive whole number"),
        ("epochs = 1", "epochs = -1", "key 'epochs' must be a positive number, got -1"),
        ('"bf16"', '"int8"', "key 'precision' must be one of fp32, tf32, bf16, fp16, got 'int8'"),
        ("cpu = 0.2", "cpu = 1.5", "key 'efficiency.cpu' must be a fraction in (0, 1], got 1.5"),
        ("cpu = 0.2", "tpu = 0.2", "unknown key 'efficiency.tpu'"),
        ("sequence_length = 256\n", "", ": a transformer shape needs sequence_length"),
        ("heads = 4", "heads = 400", ": heads (400) cannot exceed hidden (256)"),
        ("tokens = 1_000_000", "samples = 10", ": give either flops_per_sample with samples"),
    ],
)
def test_bad_workloads_name_file_entry_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    _workloads(tmp_path, old, new, "[[workload]] entry 2 ('tiny-lm'): ", expected)


def test_workloads_file_level_rules(tmp_path: Path) -> None:
    _workloads(tmp_path, '"tiny-lm"', '"tiny-cnn"', "workload 'tiny-cnn' appears more than once")
    _workloads(tmp_path, "bf16 = 18", "bf16 = 0", "key 'bytes_per_parameter.bf16' must be a")
    _workloads(tmp_path, "bf16 = 18", "int8 = 1", "unknown key 'bytes_per_parameter.int8'")
    top = "[bytes_per_parameter]"
    _workloads(tmp_path, top, f"title = 'x'\n{top}", "unknown top-level key 'title'")
    _refused(tmp_path, load_workloads, "", WorkloadError, "no [[workload]] tables")


# --------------------------------------------------------------------------------------------
# rules.toml (the built-in one, or an organization's --rules file)


def _rules(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    text = _change(_packaged("rules.toml"), old, new)
    return _refused(tmp_path, load_rules, text, RulesError, *parts)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("deadline_hours = 24", "deadline_hour = 24", "unknown key 'settings.deadline_hour'"),
        ("deadline_hours = 24", 'deadline_hours = "24"', "must be a positive number, got '24'"),
        ("deadline_hours = 24", "deadline_hours = 0", "must be a positive number, got 0"),
        ("deadline_hours = 24", "deadline_hours = nan", "must be a positive number, got nan"),
        ("gpu_far_faster = 10", "gpu_far_faster = 1", "must be a number above 1, got 1"),
        ("cpu_short_run_hours = 1", "cpu_short_run_hours = -1", "must be a positive number"),
        ('1 = { title = "A CPU is enough" }', '1 = { title = "" }', "must be non-empty"),
    ],
)
def test_bad_settings_name_file_and_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    _rules(tmp_path, old, new, expected)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("cores = 8", "cores = 8\nthreads = 16", "unknown key 'threads'"),
        ("cores = 8\n", "", "missing key 'cores' (a cpu candidate needs it)"),
        ("cores = 8", "cores = 8.5", "key 'cores' must be a positive whole number, got 8.5"),
        ("cores = 8", "cores = true", "key 'cores' must be a positive whole number, got true"),
        ("clock_mhz = 4500", "clock_mhz = inf", "key 'clock_mhz' must be a positive number"),
        ("memory_gb = 64", "memory_gb = -64", "key 'memory_gb' must be a positive number, got -64"),
        ("memory_gb = 64", 'memory_gb = 64\ngpu = "RTX 4090"', "key 'gpu' is not for a cpu"),
    ],
)
def test_bad_candidates_name_file_entry_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    _rules(tmp_path, old, new, "[[candidate]] entry 1 ('cpu'): ", expected)


def test_rules_sections_and_cross_checks(tmp_path: Path) -> None:
    _rules(
        tmp_path,
        '2 = { title = "One GPU" }',
        '2 = { title = "One GPU", max_hours = 24 }',
        "scenarios.2: max_hours is no longer read",
    )
    _rules(tmp_path, "2 = {", "5 = {", "unknown key 'scenarios.5' (known: 1, 2, 3, 4)")
    _rules(tmp_path, "= 0.9", "= 1.5", "key 'settings.multi_gpu_scaling' must be a fraction")
    _rules(tmp_path, "[settings]", "[settings]\nspeed = 1", "unknown key 'settings.speed'")
    _rules(tmp_path, 'role = "node"', 'role = "big_gpu"', "no [[candidate]] with role = 'node'")
    _rules(tmp_path, "gpus = 4", "gpus = 4\ncores = 8", "entry 5 ('workstation'): key 'cores' is")
    _rules(tmp_path, "[scenarios]", "[scenario]", "unknown top-level key 'scenario'")
    old_rule = '[[rule]]\nid = "x"\nscenario = 1\nwhen = {}\n\n[[candidate]]\nrole = "cpu"'
    _rules(tmp_path, '[[candidate]]\nrole = "cpu"', old_rule, "[[rule]] tables are no longer read")
    assert load_rules() is load_rules()  # the built-in rules are read once


# --------------------------------------------------------------------------------------------
# --prices files


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("hourly = 1\ncost = 2", "unknown key 'cost'"),
        ("hourly = -1", "key 'hourly' must be a non-negative number, got -1"),
        ("hourly = nan", "key 'hourly' must be a non-negative number, got nan"),
        ("purchase = true", "key 'purchase' must be a non-negative number, got true"),
        ('purchase = "cheap"', "key 'purchase' must be a non-negative number, got 'cheap'"),
    ],
)
def test_bad_prices_name_file_entry_and_key(tmp_path: Path, row: str, expected: str) -> None:
    text = f'[[price]]\nhardware = "cpu"\n[[price]]\nhardware = "node"\n{row}\n'
    _refused(tmp_path, load_prices, text, InputError, "[[price]] entry 2 ('node'): ", expected)


def test_prices_file_level_rules(tmp_path: Path) -> None:
    _refused(tmp_path, load_prices, "", InputError, "no prices: give [[card]]")
    missing = "[[price]]\nhourly = 1\n"
    _refused(tmp_path, load_prices, missing, InputError, "entry 1: missing key 'hardware'")
    twice = '[[price]]\nhardware = "node"\n' * 2
    _refused(tmp_path, load_prices, twice, InputError, "hardware 'node' appears more than once")
    path = tmp_path / "prices.toml"
    path.write_text('date = 2026-11-01\n[[price]]\nhardware = "node"\nhourly = 25\n', "utf-8")
    assert load_prices(path).date == "2026-11-01"


# --------------------------------------------------------------------------------------------
# calibration.toml

_CALIBRATION = """
[[row]]
id = "rn50-a100"
origin = "nvidia"
hardware = "A100 SXM4 80GB"
gpus = 1
workload = "ResNet-50"
preset = "resnet50-imagenet"
precision = "fp16"
measured = 2470
unit = "samples_per_s"
source = "a README"

[[row]]
id = "gpt-h100"
origin = "a-lab"
hardware = "H100 SXM"
gpus = 8
workload = "a GPT"
kind = "transformer"
parameters = 1_300_000_000
sequence_length = 2048
layers = 24
hidden = 2048
heads = 16
precision = "bf16"
measured = 400_000
unit = "tokens_per_s"
source = "a paper"
"""


def _calibration(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    text = _change(_CALIBRATION, old, new)
    return _refused(tmp_path, load_calibration, text, CalibrationError, *parts)


def test_a_good_calibration_table_loads(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text(_CALIBRATION, encoding="utf-8")
    first, second = load_calibration(path)
    assert (first.id, first.preset) == ("rn50-a100", "resnet50-imagenet")
    assert second.shape["layers"] == 24


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("heads = 16", "heads = 16\nlr = 3e-4", "unknown key 'lr'"),
        ('source = "a paper"', "", "missing key 'source'"),
        ("gpus = 8", "gpus = 8.0\ncpu_ghz = 3", "'cpu_ghz' is for CPU rows (gpus = 0) only"),
        ("gpus = 8", "gpus = -8", "key 'gpus' must be a whole number >= 0, got -8"),
        ("= 400_000", "= false", "key 'measured' must be a positive number, got false"),
        ("= 400_000", "= nan", "key 'measured' must be a positive number, got nan"),
        ("= 400_000", "= -inf", "key 'measured' must be a positive number, got -inf"),
        ("layers = 24", "layers = 0", "key 'layers' must be a positive whole number, got 0"),
        ('"gpt-h100"', '"GPT H100"', "key 'id' must be a lower-case slug, got 'GPT H100'"),
        ('"tokens_per_s"', '"hours"', "unit 'hours' needs 'run_tokens' (the whole run)"),
        ('"H100 SXM"', '"Voodoo 2"', "GPU 'Voodoo 2' is not in the GPU catalog"),
        ('kind = "transformer"', 'kind = "rnn"', "key 'kind' must be one of conv, transformer"),
    ],
)
def test_bad_calibration_rows_name_file_entry_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    label = "[[row]] entry 2 ('GPT H100')" if "GPT H100" in new else "[[row]] entry 2 ('gpt-h100')"
    _calibration(tmp_path, old, new, label, expected)


def test_calibration_file_level_rules(tmp_path: Path) -> None:
    _calibration(tmp_path, '"gpt-h100"', '"rn50-a100"', "id 'rn50-a100' appears more than once")
    _calibration(tmp_path, "[[row]]", "rows = 2\n[[row]]", "unknown top-level key 'rows'")
    _refused(tmp_path, load_calibration, "", CalibrationError, "no [[row]] tables")
    # A TF32 figure from a GPU without TF32 tensor cores (Volta) is an FP32 run.
    text = _change(_CALIBRATION, '"H100 SXM"', '"V100 SXM2"').replace('"bf16"', '"tf32"')
    message = _refused(tmp_path, load_calibration, text, CalibrationError, "entry 2 ('gpt-h100')")
    assert "precision 'tf32' needs a GPU with TF32" in message


# --------------------------------------------------------------------------------------------
# memory_cases.toml

_CASES = """
[[case]]
id = "small"
claim = "a small model fits"
source = "a README"
expect = "fits"
device_gib = 24

[case.spec]
parameters = 1e8
precision = "fp32"
batch_size = 8

[[case]]
id = "lora"
claim = "LoRA on one GPU"
source = "a blog"
expect = "trainable"
device_mib = 16384

[case.spec]
parameters = 7e9
lora_rank = 16
precision = "bf16"
batch_size = 4

[case.spec.transformer]
layers = 32
hidden = 4096
heads = 32
sequence_length = 1024
"""


def _cases(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    def load(path: Path) -> Any:
        return load_memory_cases(path.read_text(encoding="utf-8"), str(path))

    text = _change(_CASES, old, new)
    return _refused(tmp_path, load, text, MemoryModelError, "[[case]] entry 2 ('lora'): ", *parts)


def test_good_memory_cases_load() -> None:
    small, lora = load_memory_cases(_CASES, "cases.toml")
    assert small.device_bytes == 24 * 2**30 and lora.device_bytes == 16 * 2**30
    assert lora.spec.trainable_parameters == lora_trainable_parameters(32, 4096, 16)
    assert lora.spec.parameters == 7e9 + lora.spec.trainable_parameters


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('source = "a blog"', 'source = "a blog"\nurl = "x"', "unknown key 'url'"),
        (
            "lora_rank = 16",
            "lora_rnk = 16",
            "unknown key 'spec.lora_rnk' (did you mean 'lora_rank'?)",
        ),
        ("heads = 32", "heads = 32\nexperts = 8", "unknown key 'spec.transformer.experts'"),
        ('claim = "LoRA on one GPU"\n', "", "missing key 'claim'"),
        ("hidden = 4096\n", "", "missing key 'spec.transformer.hidden'"),
        ("batch_size = 4", 'batch_size = "4"', "key 'spec.batch_size' must be a positive whole"),
        (
            "parameters = 7e9",
            "parameters = true",
            "key 'spec.parameters' must be a positive number, got true",
        ),
        ("= 7e9", "= nan", "key 'spec.parameters' must be a positive number, got nan"),
        ("= 16384", "= inf", "key 'device_mib' must be a positive number, got inf"),
        ("= 16384", "= -16384", "key 'device_mib' must be a positive number, got -16384"),
        ('"trainable"', '"maybe"', "key 'expect' must be one of fits, needs_changes, "),
        (
            "heads = 32",
            "heads = 8192",
            "spec.transformer: heads (8192) cannot exceed hidden (4096)",
        ),
        ("= 16384", "= 16384\ndevice_gib = 16", "give device_gib or device_mib, one of them"),
        ("lora_rank = 16", "lora_rank = 16\ntrainable_parameters = 1e6", "spec: give lora_rank"),
        ("parameters = 7e9", "parameters = 1e27", "spec: parameters 1e+27 is over 1e+15"),
    ],
)
def test_bad_memory_cases_name_file_entry_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    _cases(tmp_path, old, new, expected)


def test_memory_case_file_level_rules(tmp_path: Path) -> None:
    def load(path: Path) -> Any:
        return load_memory_cases(path.read_text(encoding="utf-8"), str(path))

    twice = _change(_CASES, 'id = "lora"', 'id = "small"')
    _refused(tmp_path, load, twice, MemoryModelError, "case 'small' appears more than once")
    _refused(tmp_path, load, "", MemoryModelError, "no [[case]] tables")
    with pytest.raises(MemoryModelError) as caught:
        shape = {"layers": 2.5, "hidden": 64, "heads": 2, "sequence_length": 8}
        spec_from_mapping({"parameters": 1e9, "transformer": shape}, "my spec")
    assert str(caught.value).startswith("my spec: key 'transformer.layers' must be a positive")


# --------------------------------------------------------------------------------------------
# drivers.toml


def _drivers(tmp_path: Path, old: str, new: str, *parts: str) -> str:
    text = _change(_packaged("drivers.toml"), old, new)
    return _refused(tmp_path, load_driver_branches, text, CatalogError, *parts)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('"12.8" = 570', '"12.8" = "570"', "key 'linux_driver_branch.12.8' must be a positive"),
        ('"12.8" = 570', '"12.8" = true', "key 'linux_driver_branch.12.8' must be a positive"),
        ('"12.8" = 570', '"12.8" = -570', "whole number, got -570"),
        ('"12.8" = 570', '"12.8" = nan', "whole number, got nan"),
        ('"12.8" = 570', '"12.8" = 570.5', "whole number, got 570.5"),
        ('"12.8" = 570', '"12.x" = 570', "the name of key 'linux_driver_branch.12.x' must be a"),
        ("[linux_driver_branch]", "[linux_driver_branches]", "unknown top-level key "),
        ("[linux_driver_branch]", "[windows]\n[linux_driver_branch]", "(known: linux_driver_"),
    ],
)
def test_bad_driver_branches_name_file_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    _drivers(tmp_path, old, new, expected)


def test_a_new_cuda_release_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "drivers.toml"
    path.write_text(_packaged("drivers.toml") + '"13.1" = 585\n', encoding="utf-8")
    assert load_driver_branches(path)[(13, 1)] == 585
    assert load_driver_branches()[(12, 8)] == 570 and (13, 1) not in load_driver_branches()


# --------------------------------------------------------------------------------------------
# Every packaged file


@pytest.mark.parametrize(
    ("name", "load"),
    [
        ("gpus.toml", load_catalog),
        ("workloads.toml", load_workloads),
        ("calibration.toml", load_calibration),
        ("rules.toml", load_rules),
        ("memory_cases.toml", lambda path: load_memory_cases(path.read_text("utf-8"), str(path))),
        ("drivers.toml", load_driver_branches),
    ],
)
def test_every_packaged_file_loads_as_it_is_and_from_a_copy(
    tmp_path: Path, name: str, load: Callable[..., Any]
) -> None:
    packaged = load() if name != "memory_cases.toml" else load_memory_cases()
    path = tmp_path / name
    path.write_text(_packaged(name), encoding="utf-8")
    copied = load(path)
    if name == "rules.toml":
        assert copied.candidates == packaged.candidates
        assert copied.scenarios == packaged.scenarios
        assert copied.deadline_hours == packaged.deadline_hours
    else:
        assert copied == packaged and len(packaged) > 0
