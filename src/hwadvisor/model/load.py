"""Reading a saved profile back: any schema version up to this tool's, with clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hwadvisor.errors import InputError
from hwadvisor.inputfile import read_input
from hwadvisor.model import fastjson
from hwadvisor.model.profile import SCHEMA_VERSION, Profile


def _class_of(gpus: object) -> int:
    """The class of hardware of an estimate: 1 a CPU, 2 one GPU, 3 up to 8, 4 more."""
    n = gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0
    return 1 if n <= 0 else 2 if n == 1 else 3 if n <= 8 else 4


_RECOMMENDED = (
    "hardware",
    "origin",
    "gpus",
    "seconds",
    "low_seconds",
    "high_seconds",
    "fits_memory",
    "memory_plan",
    "purchase_cost",
    "hourly_cost",
    "run_cost",
    "break_even_hours",
)


def _advice_v7(advice: Any) -> Any:
    """Advice written before the answer was one object: the deadline was the scenario's time
    limit, the recommendation the first rung that met it, each estimate's class its GPUs."""
    if not isinstance(advice, dict):
        return advice
    out = dict(advice)
    me = dict(out.get("this_machine") or {})
    if "sufficient" in me:
        me.setdefault("verdict", "enough" if me["sufficient"] else "not enough")
    out["this_machine"] = me
    out.setdefault("deadline_hours", me.get("limit_hours", 0.0))
    rows = []
    for e in out.get("estimates") or []:
        if isinstance(e, dict):
            e = {**e, "scenario_class": e.get("scenario_class") or _class_of(e.get("gpus"))}
        rows.append(e)
    out["estimates"] = rows
    if "recommendation" not in out:
        first = next(
            (
                e
                for e in rows
                if isinstance(e, dict)
                and e.get("origin") != "this-machine"
                and e.get("meets_scenario")
            ),
            None,
        )
        out["recommendation"] = (
            None
            if first is None
            else {
                **{k: first[k] for k in _RECOMMENDED if k in first},
                "scenario_class": first["scenario_class"],
            }
        )
    return out


def _migrate(data: dict[str, Any], version: int) -> dict[str, Any]:
    """Bring an older profile to the current shape (each step is one schema bump)."""
    if version < 2:
        data = {**data, "benchmarks": None}
    if version < 3:
        data = {**data, "advice": None}
    if version < 7 and data.get("advice") is not None:
        data = {**data, "advice": _advice_v7(data["advice"])}
    return {**data, "schema_version": SCHEMA_VERSION}


def profile_document(text: str) -> tuple[dict[str, Any], int]:
    """The JSON object of a profile and its schema version, checked as far as the JSON alone
    allows (the model is not built: the fleet roll-up reads thousands of these); a one-line
    :class:`InputError` without the file's name otherwise."""
    try:
        data = fastjson.loads(text)
    except json.JSONDecodeError as exc:
        # The text stops where more was expected, or inside a string that never closes.
        ended = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        cut = ": cut off?" if ended else ""
        raise InputError(
            f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){cut}"
        ) from exc
    except RecursionError as exc:
        raise InputError("JSON nested too deeply to be a profile") from exc
    except ValueError as exc:
        # json refuses integers of over 4,300 digits: no machine wrote one.
        raise InputError("a number of thousands of digits: not a measurement") from exc
    if not isinstance(data, dict) or "schema_version" not in data:
        raise InputError("not an hwadvisor profile (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"schema_version {version!r} is not a positive integer")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"written by a newer hwadvisor (schema {version}; this one reads up to "
            f"{SCHEMA_VERSION}): upgrade hwadvisor"
        )
    return data, version


def parse_profile(text: str, origin: str = "profile") -> Profile:
    """Validate the JSON text of a profile; raise :class:`InputError` with a one-line reason."""
    try:
        data, version = profile_document(text)
    except InputError as exc:
        raise InputError(f"{origin}: {exc}") from exc
    try:
        return Profile.model_validate(_migrate(data, version))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise InputError(
            f"{origin}: invalid profile at {where}: {first['msg']} "
            f"({exc.error_count()} problem(s) in all)"
        ) from exc


def looks_like_profile(text: str) -> bool:
    """A saved profile: a JSON object with ``schema_version`` (its first key, as written)."""
    body = text.lstrip("\ufeff \t\r\n")
    return body.startswith("{") and '"schema_version"' in body[:65536]


def read_text_file(path: Path) -> str:
    """The text of an input file (:func:`hwadvisor.inputfile.read_input`: regular files only, a
    size cap, UTF-8 or UTF-16); problems are one-line input errors."""
    return read_input(path)


def load_profile(path: Path) -> Profile:
    """Read and validate a profile file."""
    return parse_profile(read_text_file(path), str(path))
