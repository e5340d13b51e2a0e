"""Strict JSON and atomic, never-overwriting writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hwadvisor.errors import OutputError
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import CpuInfo, Profile, ToolInfo
from hwadvisor.render import jsonio


def _profile() -> Profile:
    return Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z")


def test_non_finite_values_become_null_with_reason() -> None:
    p = _profile()
    p.cpu = CpuInfo(
        base_frequency_mhz=fact(float("inf"), Source.PSUTIL),
        max_frequency_mhz=Fact[float](value=float("nan"), source=Source.SYSFS),
    )
    text = jsonio.to_json(p)
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["cpu"]["base_frequency_mhz"] == {
        "value": None,
        "source": "psutil",
        "reason": "not reported",
    }
    assert data["cpu"]["max_frequency_mhz"]["value"] is None
    assert "non-finite" in data["cpu"]["max_frequency_mhz"]["reason"]


def test_unknown_fact_always_has_a_reason() -> None:
    assert Fact[int]().reason == "unknown"
    assert unknown("no GPU", Source.NVML).model_dump(mode="json") == {
        "value": None,
        "source": "nvml",
        "reason": "no GPU",
    }


def test_hostile_strings_survive_as_data() -> None:
    p = _profile()
    p.cpu.model_name = fact('<script>alert("x")</script> [red]x[/red]', Source.PROCFS)
    data = json.loads(jsonio.to_json(p))
    assert data["cpu"]["model_name"]["value"] == '<script>alert("x")</script> [red]x[/red]'


def test_key_order_is_stable() -> None:
    keys = list(json.loads(jsonio.to_json(_profile())))
    assert keys[:4] == ["schema_version", "tool", "created_utc", "host"]
    assert keys == list(json.loads(jsonio.to_json(_profile())))


def test_write_new_file_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("precious")
    with pytest.raises(OutputError, match="already exists"):
        jsonio.write_new_file(target, "{}")
    assert target.read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["a.json"]  # no temp file left


def test_write_unique_picks_a_free_name(tmp_path: Path) -> None:
    first = jsonio.write_unique(tmp_path, "host-1", ".json", "1")
    second = jsonio.write_unique(tmp_path, "host-1", ".json", "2")
    assert first.name == "host-1.json" and second.name == "host-1-2.json"
    assert first.read_text() == "1" and second.read_text() == "2"


def test_unwritable_folder_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create output folder"):
        jsonio.write_new_file(blocker / "sub" / "a.json", "{}")


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        jsonio.write_new_file(tmp_path / "a.json", "{}")
    assert os.listdir(tmp_path) == []


def test_filesystem_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*_args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    path = jsonio.write_new_file(tmp_path / "a.json", "{}")
    assert path.read_text() == "{}"
    with pytest.raises(OutputError, match="already exists"):
        jsonio.write_new_file(tmp_path / "a.json", "[]")
    assert path.read_text() == "{}"
