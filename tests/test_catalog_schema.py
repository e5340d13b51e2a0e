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

from hwadvisor.catalog import CatalogError, find_gpu_peak, load_catalog
from hwadvisor.catalog.schema import DataModel, OptPositive, Text, load_table

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
