"""The parsed-catalog cache (``hwadvisor.catalog.toml.packaged_data``): the same data as
parsing the TOML, whatever state the cache folder is in; never a failure of its own."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.toml import cache_dir, packaged_data, packaged_text, parse_toml

CATALOGS = ["gpus.toml", "prices.toml", "llms.toml", "serve_model.toml", "rules.toml"]


def _parsed(name: str) -> dict[str, object]:
    return parse_toml(packaged_text(name), name, CatalogError)


@pytest.mark.parametrize("name", CATALOGS)
def test_a_cached_catalog_is_the_parsed_toml_first_and_second_time(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    first = packaged_data(name, CatalogError)
    written = list(tmp_path.glob(f"{Path(name).stem}-*.json"))
    assert len(written) == 1
    second = packaged_data(name, CatalogError)
    assert first == second == _parsed(name)
    # Types survive the round trip (a strict catalog tells 1 from 1.0).
    assert json.dumps(second, sort_keys=True) == json.dumps(_parsed(name), sort_keys=True)


def test_the_cache_is_read_not_reparsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    packaged_data("llms.toml", CatalogError)
    import hwadvisor.catalog.toml as toml_module

    def refuse(*_: object) -> None:
        raise AssertionError("the TOML was parsed again")

    monkeypatch.setattr(toml_module.tomllib, "loads", refuse)
    assert (
        packaged_data("llms.toml", CatalogError)
        == json.loads(next(tmp_path.glob("llms-*.json")).read_text())["data"]
    )


@pytest.mark.parametrize(
    "damage",
    [b"", b"{", b"\xff\xfe garbage", b"[1, 2]", b'{"catalog": "gpus.toml"}',
     b'{"catalog": "other.toml", "data": {}}', b'{"catalog": "gpus.toml", "data": [1]}',
     b"[" * 100_000],
)  # fmt: skip
def test_a_damaged_cache_file_is_parsed_again_and_replaced(
    damage: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    packaged_data("gpus.toml", CatalogError)
    path = next(tmp_path.glob("gpus-*.json"))
    path.write_bytes(damage)
    assert packaged_data("gpus.toml", CatalogError) == _parsed("gpus.toml")
    assert json.loads(path.read_text())["catalog"] == "gpus.toml"  # rewritten whole


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_cache_folder_costs_only_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o500)
    try:
        monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path / "sub"))
        assert packaged_data("llms.toml", CatalogError) == _parsed("llms.toml")
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_folder_that_is_a_file_or_a_full_disk_costs_only_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(blocker))
    assert packaged_data("llms.toml", CatalogError) == _parsed("llms.toml")
    assert blocker.read_text() == "not a folder"

    import hwadvisor.catalog.toml as toml_module

    def full(*_: object, **__: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(toml_module.os, "replace", full)
    assert packaged_data("llms.toml", CatalogError) == _parsed("llms.toml")
    assert list((tmp_path / "cache").iterdir()) == []  # no temporary file left behind


def test_an_earlier_catalogs_cache_is_removed_and_others_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    old = tmp_path / "gpus-0123456789abcdef0123456789abcdef.json"
    old.write_text('{"catalog": "gpus.toml", "data": {"gpu": []}}')
    other = tmp_path / "prices-0123456789abcdef0123456789abcdef.json"
    other.write_text("{}")
    mine = tmp_path / "notes.txt"
    mine.write_text("the user's")
    # A file of another content is never read: the name is the text's hash.
    assert packaged_data("gpus.toml", CatalogError) == _parsed("gpus.toml")
    assert not old.exists() and other.exists() and mine.read_text() == "the user's"


def test_an_empty_cache_setting_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", "")
    assert cache_dir() is None
    monkeypatch.chdir(tmp_path)
    assert packaged_data("llms.toml", CatalogError) == _parsed("llms.toml")
    assert list(tmp_path.iterdir()) == []


def test_the_cache_folder_follows_the_platform_conventions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HWADVISOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache_dir() == Path("/somewhere/hwadvisor")
    monkeypatch.delenv("XDG_CACHE_HOME")
    folder = cache_dir()
    assert folder is not None and folder.name == "hwadvisor" and folder.is_absolute()
