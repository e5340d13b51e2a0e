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


# --------------------------------------------------------------------------------------------
# Catalogs kept as validated (``packaged_plain``): the GPU catalog, the model catalog and the
# built-in prices are built from the kept values on later runs, without pydantic.


def _fresh_gpus() -> object:
    from hwadvisor.catalog import peaks

    return peaks._read_default_catalog()  # the process's own catalog stays as it is


def _fresh_llms() -> object:
    from hwadvisor.catalog import llms

    return llms._read_catalog()


def _fresh_prices() -> object:
    from hwadvisor.advise import pricing

    return pricing._read_builtin()[1]


def _validated(name: str) -> object:
    """The catalog built straight from its TOML through pydantic, no cache at all."""
    from hwadvisor.advise import pricing
    from hwadvisor.catalog import llms, peaks

    if name == "gpus.toml":
        return tuple(peaks._parse_catalog(packaged_text(name), name))
    if name == "llms.toml":
        return llms.parse_llms(packaged_text(name))
    return pricing._book([(pricing._plain_file(_parsed(name), name), "built-in price catalog")])


KEPT = {"gpus.toml": _fresh_gpus, "llms.toml": _fresh_llms, "prices.toml": _fresh_prices}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_a_kept_catalog_builds_what_validating_its_toml_builds(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    first = KEPT[name]()
    kept = list(tmp_path.glob(f"{Path(name).stem}.plain-*.json"))
    assert len(kept) == 1
    import pydantic

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("validated again")

    # The second time nothing is validated: the kept values are read and built from.
    monkeypatch.setattr(pydantic.BaseModel, "model_validate", classmethod(refuse))
    second = KEPT[name]()
    monkeypatch.undo()
    assert first == second == _validated(name)


@pytest.mark.parametrize("name", sorted(KEPT))
@pytest.mark.parametrize(
    "damage",
    [b"", b"{", b"[1]", b'{"catalog": "x.toml", "plain": []}', b'{"catalog": "NAME"}',
     b'{"catalog": "NAME", "plain": 7}', b'{"catalog": "NAME", "plain": [{"name": 1}]}',
     b'{"catalog": "NAME", "plain": {"currency": "USD"}}', b'{"catalog": "NAME", "plain": ["x"]}'],
)  # fmt: skip
def test_damaged_or_foreign_kept_values_are_validated_again(
    name: str, damage: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    KEPT[name]()
    path = next(tmp_path.glob(f"{Path(name).stem}.plain-*.json"))
    path.write_bytes(damage.replace(b"NAME", name.encode()))
    assert KEPT[name]() == _validated(name)
    # and the next run finds good values again
    assert KEPT[name]() == _validated(name)


def test_changed_code_is_a_new_kept_file_and_the_earlier_one_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.catalog import llms
    from hwadvisor.catalog.toml import packaged_plain

    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    _fresh_llms()
    (before,) = tmp_path.glob("llms.plain-*.json")
    changed = tmp_path / "validator.py"
    changed.write_text("a model changed since")
    rows = packaged_plain("llms.toml", CatalogError, llms._rows, (*llms._CODE, str(changed)))
    (after,) = tmp_path.glob("llms.plain-*.json")
    assert after != before and rows == json.loads(after.read_text())["plain"]
    # the parsed-TOML file of the same catalog is another one, kept
    assert list(tmp_path.glob("llms-*.json"))


@pytest.mark.parametrize("name", sorted(KEPT))
def test_code_that_cannot_be_read_or_no_cache_folder_validates_every_time(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.catalog.toml import packaged_plain

    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def plain(data: dict[str, object]) -> list[object]:
        calls.append(1)
        return [len(data)]

    zipped = (str(tmp_path / "hwadvisor.zip" / "peaks.py"),)  # a zipped install's module
    assert packaged_plain(name, CatalogError, plain, zipped) == [len(_parsed(name))]
    assert packaged_plain(name, CatalogError, plain, zipped) == [len(_parsed(name))]
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", "")
    assert packaged_plain(name, CatalogError, plain, ()) == [len(_parsed(name))]
    assert len(calls) == 3
    assert not list(tmp_path.glob("*.plain-*.json"))


def _fresh_names() -> object:
    from hwadvisor.advise import names

    return names._read_kept()


def test_the_kept_gpu_name_index_is_the_one_built_and_beside_the_kept_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.advise import names

    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    first = _fresh_names()
    _fresh_gpus()  # the catalog's own kept rows are another file, and neither removes the other
    assert len(list(tmp_path.glob("gpus.names-*.json"))) == 1
    assert len(list(tmp_path.glob("gpus.plain-*.json"))) == 1

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(names, "_build", refuse)
    second = _fresh_names()
    monkeypatch.undo()
    assert first == second == names._build(tuple(names.load_catalog()))


@pytest.mark.parametrize(
    "damage",
    [b"{", b'{"catalog": "gpus.toml", "plain": []}', b'{"catalog": "gpus.toml", "plain": {}}',
     b'{"catalog": "gpus.toml", "plain": {"entries": [], "vocabulary": [], "defaults": []}}',
     b'{"catalog": "gpus.toml", "plain": {"entries": [{"name": 1}], "defaults": 5}}'],
)  # fmt: skip
def test_a_damaged_kept_name_index_is_built_again(
    damage: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.advise import names

    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    _fresh_names()
    path = next(tmp_path.glob("gpus.names-*.json"))
    path.write_bytes(damage)
    assert _fresh_names() == names._build(tuple(names.load_catalog()))
    assert names.resolve_gpu("RTX 3070").peak.name == "GeForce RTX 3070"
