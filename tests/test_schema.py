"""The published JSON Schema of the profile: strict, up to date, and true of what hwadvisor writes.

Validation needs the ``jsonschema`` package (a dev dependency); without it those tests skip.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import hwadvisor.model
from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.importers.detect import import_file
from hwadvisor.model.jsonschema import (
    SCHEMA_FILE,
    UTC_PATTERN,
    packaged_schema_text,
    profile_schema,
    schema_id,
    schema_text,
)
from hwadvisor.model.load import parse_profile
from hwadvisor.model.profile import SCHEMA_VERSION
from hwadvisor.pipeline import ScanOptions, run_scan
from hwadvisor.render.jsonio import to_json
from tests.helpers.expectations import refused

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PUBLISHED = ROOT / "schema" / SCHEMA_FILE
PACKAGED = ROOT / "src" / "hwadvisor" / "model" / SCHEMA_FILE
REGENERATE = "stale: run `python scripts/write_schema.py` after changing the model"
T = "tests.helpers.child_targets"


def _profile_fixtures() -> list[Path]:
    """Every JSON file under tests/fixtures that is an hwadvisor profile."""
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict) and "schema_version" in doc and "tool" in doc:
            found.append(path)
    return found


PROFILES = _profile_fixtures()
IMPORTS = sorted(
    path
    for folder in ("import", "nvidia-smi")
    for path in (FIXTURES / folder).iterdir()
    if path.is_file()
    and path.suffix not in (".md", ".toml")
    and path.name not in refused(FIXTURES / "import" / "expected.toml")  # no profile to validate
)


def _rel(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.fixture(scope="module")
def validator() -> Any:
    js = pytest.importorskip(
        "jsonschema", reason="jsonschema is not installed (a dev dependency): validation skipped"
    )
    schema = profile_schema()
    js.Draft202012Validator.check_schema(schema)
    return js.Draft202012Validator(schema)


def _errors(validator: Any, doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def _current(path: Path) -> dict[str, Any]:
    """A fixture as this version writes it: read (older versions migrated), then dumped."""
    doc: dict[str, Any] = json.loads(to_json(parse_profile(path.read_text("utf-8"), _rel(path))))
    return doc


# --------------------------------------------------------------------------------------------
# Published and up to date


def test_published_files_match_the_model() -> None:
    text = schema_text()
    assert PUBLISHED.is_file(), f"{PUBLISHED.relative_to(ROOT)} missing: {REGENERATE}"
    assert PUBLISHED.read_text(encoding="utf-8") == text, f"schema/{SCHEMA_FILE} {REGENERATE}"
    assert PACKAGED.read_text(encoding="utf-8") == text, f"packaged {SCHEMA_FILE} {REGENERATE}"


def test_packaged_schema_is_found_by_importlib_resources() -> None:
    packaged = packaged_schema_text()
    from_source_tree = Path(hwadvisor.model.__file__).resolve().parent == PACKAGED.parent
    if packaged is None and not from_source_tree:
        pytest.skip("hwadvisor is installed without the schema file (package data)")
    assert packaged is not None, f"{SCHEMA_FILE} not found in hwadvisor.model"
    assert packaged == schema_text()


def test_cli_prints_the_published_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == ExitStatus.OK
    assert capsys.readouterr().out == PUBLISHED.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Strict


def test_envelope() -> None:
    schema = profile_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == schema_id() == f"urn:hwadvisor:profile:{SCHEMA_VERSION}"
    assert schema["title"] == "hwadvisor profile"
    assert f"schema_version {SCHEMA_VERSION}" in schema["description"]
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    created = schema["properties"]["created_utc"]
    assert created["format"] == "date-time" and created["pattern"] == UTC_PATTERN
    imported = schema["$defs"]["ImportInfo"]["properties"]["imported_utc"]
    assert imported["pattern"] == UTC_PATTERN
    taken = schema["$defs"]["ImportedFile"]["properties"]["taken_utc"]["anyOf"]
    assert {"type": "null"} in taken
    assert any(b.get("pattern") == UTC_PATTERN for b in taken)


def _objects(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("(top level)", schema), *schema["$defs"].items()]


def test_every_model_object_is_closed_and_fully_required() -> None:
    for name, node in _objects(profile_schema()):
        if "properties" not in node:
            continue
        assert node["additionalProperties"] is False, name
        assert node["required"] == list(node["properties"]), name


def test_free_form_maps_stay_open() -> None:
    defs = profile_schema()["$defs"]
    assert defs["PlatformInfo"]["properties"]["visibility_env"]["additionalProperties"] == {
        "type": "string"
    }
    assert isinstance(defs["Measurement"]["properties"]["params"]["additionalProperties"], dict)


def test_required_keys_are_what_the_writer_writes() -> None:
    """Every key a dumped profile holds is a property, and every property is dumped."""
    doc = _current(FIXTURES / "reports" / "eight-gpu.json")
    schema = profile_schema()
    assert list(doc) == schema["required"]
    assert list(doc["gpus"][0]) == schema["$defs"]["GpuInfo"]["required"]
    assert list(doc["cpu"]["vendor"]) == schema["$defs"]["Fact_str_"]["required"]


# --------------------------------------------------------------------------------------------
# True of what hwadvisor writes


def test_fixture_profiles_are_found() -> None:
    names = {_rel(p) for p in PROFILES}
    assert {
        "reports/cpu-only.json",
        "reports/single-gpu.json",
        "reports/eight-gpu.json",
        "profiles/v1-cpu-only.json",
    } <= names


@pytest.mark.parametrize("path", PROFILES, ids=_rel)
def test_fixture_profile_validates(validator: Any, path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if raw["schema_version"] == SCHEMA_VERSION:
        assert _errors(validator, raw) == []
    # Older versions describe themselves, not this schema: migrated through the loader first.
    assert _errors(validator, _current(path)) == []


@pytest.mark.parametrize("path", IMPORTS, ids=_rel)
def test_imported_profile_validates(validator: Any, path: Path) -> None:
    doc = json.loads(to_json(import_file(path)))
    assert _errors(validator, doc) == []


def test_scan_of_this_machine_validates(validator: Any, tmp_path: Path) -> None:
    profile = run_scan(ScanOptions(out_dir=tmp_path, bench=False))
    assert _errors(validator, json.loads(to_json(profile))) == []


def test_scan_with_gpus_validates(validator: Any, tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:nvml_two_h100"
    options.targets["torch"] = f"{T}:torch_cpu_only"
    doc = json.loads(to_json(run_scan(options)))
    assert len(doc["gpus"]) == 2 and doc["findings"]
    assert _errors(validator, doc) == []


# --------------------------------------------------------------------------------------------
# What it rejects


def _set(doc: dict[str, Any], where: list[str | int], value: Any) -> None:
    node: Any = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value


BROKEN: dict[str, tuple[list[str | int], Any]] = {
    "schema_version 99": (["schema_version"], 99),
    "schema_version 1": (["schema_version"], 1),
    "created_utc yesterday": (["created_utc"], "yesterday"),
    "created_utc with an offset": (["created_utc"], "2026-11-21T10:00:00+01:00"),
    "created_utc a date only": (["created_utc"], "2026-11-21"),
    "unknown top-level key": (["colour"], "blue"),
    "unknown key in a GPU": (["gpus", 0, "colour"], "blue"),
    "unknown key in a fact": (["gpus", 0, "name", "confidence"], "high"),
    "unknown key in a measurement": (["benchmarks", "measurements", 0, "colour"], "blue"),
    "another tool's name": (["tool", "name"], "othertool"),
    "a fact's unknown source": (["cpu", "vendor", "source"], "guesswork"),
    "a null fact without a reason": (
        ["cpu", "hypervisor"],
        {"value": None, "source": None, "reason": None},
    ),
    "a string count": (["gpus", 0, "vram_total_bytes", "value"], "40 GB"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_profile_fails(validator: Any, case: str) -> None:
    doc = _current(FIXTURES / "reports" / "eight-gpu.json")
    assert _errors(validator, doc) == []
    where, value = BROKEN[case]
    broken = copy.deepcopy(doc)
    _set(broken, where, value)
    assert _errors(validator, broken), case


@pytest.mark.parametrize(
    "where", [["advice"], ["gpus", 0, "uuid"], ["cpu", "vendor", "reason"], ["imported"]]
)
def test_missing_key_fails(validator: Any, where: list[str | int]) -> None:
    doc = _current(FIXTURES / "reports" / "eight-gpu.json")
    node: Any = doc
    for key in where[:-1]:
        node = node[key]
    del node[where[-1]]
    assert _errors(validator, doc), where


def test_reading_stays_lenient() -> None:
    """The schema is strict; the loader is not: an unknown key is ignored, not an error."""
    doc = _current(FIXTURES / "reports" / "cpu-only.json")
    doc["colour"] = "blue"
    doc["cpu"]["colour"] = "blue"
    profile = parse_profile(json.dumps(doc))
    assert "colour" not in json.loads(to_json(profile))
