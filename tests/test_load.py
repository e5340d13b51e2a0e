"""Loading saved profiles: older schema versions load, bad input is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.errors import InputError
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.model.load import load_profile, parse_profile
from hwadvisor.model.profile import SCHEMA_VERSION

V1 = Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json"


def test_schema_1_profile_loads_without_benchmarks() -> None:
    profile = load_profile(V1)
    assert profile.schema_version == SCHEMA_VERSION
    assert profile.benchmarks is None
    assert profile.cpu.logical_cores.value == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not JSON"),
        ("{", "not JSON (line 1"),
        ("[]", "no schema_version"),
        ('{"schema_version": "2"}', "not a positive integer"),
        ('{"schema_version": 99}', "newer hwadvisor (schema 99"),
        ('{"schema_version": 1, "tool": 5}', "invalid profile at tool"),
    ],
)
def test_bad_profiles_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as info:
        parse_profile(text, "x.json")
    assert "\n" not in str(info.value)
    assert info.value.exit_status == ExitStatus.INPUT_ERROR


def test_binary_and_missing_files(tmp_path: Path) -> None:
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not text"):
        load_profile(binary)
    with pytest.raises(InputError, match="cannot be read"):
        load_profile(tmp_path / "missing.json")


def test_round_trip_of_current_profile() -> None:
    profile = load_profile(V1)
    again = parse_profile(profile.model_dump_json())
    assert json.loads(again.model_dump_json()) == json.loads(profile.model_dump_json())


def test_schema_5_profile_loads_with_the_new_sections_not_probed() -> None:
    """A profile from before ``system``, ``network`` and the GPU health facts (schema 5)."""
    doc = json.loads(V1.read_text(encoding="utf-8"))
    doc["schema_version"] = 5
    doc["gpus"] = [
        {
            "index": 0,
            "vendor": "nvidia",
            "backend": "cuda",
            "name": {"value": "NVIDIA H100 80GB HBM3", "source": "nvml", "reason": None},
            "ecc_enabled": {"value": True, "source": "nvml", "reason": None},
        }
    ]
    assert "system" not in doc and "network" not in doc
    profile = parse_profile(json.dumps(doc), "v5.json")
    assert profile.schema_version == SCHEMA_VERSION == 8
    assert profile.host.labels is None  # schema 8: none given
    assert profile.system.vendor.value is None
    assert profile.system.serial.reason == "not probed"
    assert profile.network.interfaces == [] and profile.network.rdma == []
    assert profile.network.reason == "not probed"
    (gpu,) = profile.gpus
    assert gpu.name.value == "NVIDIA H100 80GB HBM3"
    for field in ("vbios_version", "ecc_errors_uncorrected_volatile", "remapped_rows_pending"):
        assert getattr(gpu, field).reason == "not probed", field
    assert gpu.xid_errors_recent.value is None
    # Saved again, it is a schema-6 profile that reads back the same.
    again = parse_profile(profile.model_dump_json())
    assert again.model_dump() == profile.model_dump()


def test_a_profile_cut_off_is_said_to_be_and_a_broken_one_is_not() -> None:
    from hwadvisor.errors import InputError
    from hwadvisor.model.load import parse_profile

    text = (Path(__file__).parent / "fixtures" / "reports" / "cpu-only.json").read_text()
    with pytest.raises(InputError, match=r"^cut\.json: not JSON \(line \d+.*: cut off\?$"):
        parse_profile(text[: len(text) // 2], "cut.json")
    broken = text.replace('"schema_version"', '"schema_version" "', 1)
    with pytest.raises(InputError) as info:
        parse_profile(broken, "broken.json")
    assert "not JSON" in str(info.value) and "cut off" not in str(info.value)
