"""The JSON Schema of the profile that ``scan`` writes (``hwadvisor schema``).

The published schema is strict where reading is lenient: hwadvisor itself reads older profiles
and ignores keys it does not know (:mod:`hwadvisor.model.load`), but the schema describes exactly
what this version writes, so that a profile from elsewhere can be checked before it is trusted:

- every key the tool writes is required (pydantic marks fields with defaults optional, yet
  :func:`hwadvisor.render.jsonio.to_json` writes every field, ``null`` included);
- no other key is allowed in any object of the model (``additionalProperties: false``); the
  free-form maps (``platform.visibility_env``, a measurement's ``params`` ...) stay open;
- ``schema_version`` is this version (``const``), ``tool.name`` is ``hwadvisor``;
- every ``*_utc`` timestamp is ISO 8601 UTC with seconds (``2026-11-21T10:02:03Z``): a ``pattern``
  as well as ``format: date-time``, since many validators do not check formats;
- a fact whose value is ``null`` carries a non-empty ``reason``.

The same schema is published as ``schema/profile.schema.json`` in the source tree and as
``hwadvisor/model/profile.schema.json`` in the package; ``scripts/write_schema.py`` writes both.
"""

from __future__ import annotations

import json
from typing import Any

#: The packaged copy, next to this module (``importlib.resources.files("hwadvisor.model")``).
SCHEMA_FILE = "profile.schema.json"

#: ISO 8601 UTC as the tool writes it: seconds, optional fraction, ``Z``.
UTC_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_id(version: int | None = None) -> str:
    """The schema's ``$id``: a stable name, not a web address."""
    if version is None:
        from hwadvisor.model.profile import SCHEMA_VERSION

        version = SCHEMA_VERSION
    return f"urn:hwadvisor:profile:{version}"


def profile_schema() -> dict[str, Any]:
    """The profile's JSON Schema (draft 2020-12), strict: see the module's docstring."""
    from hwadvisor.model.profile import SCHEMA_VERSION, Profile

    doc = Profile.model_json_schema(mode="serialization")
    defs: dict[str, Any] = doc.pop("$defs", {})
    for sub in defs.values():
        _close(sub)
    _close(doc)

    envelope = doc["properties"]
    envelope["schema_version"] = {
        "title": "Schema Version",
        "description": "The version of this schema; older profiles are read (and migrated) by "
        "hwadvisor, not described here.",
        "type": "integer",
        "const": SCHEMA_VERSION,
    }
    tool_name = defs["ToolInfo"]["properties"]["name"]
    tool_name.pop("default", None)
    tool_name["const"] = "hwadvisor"
    for name, sub in defs.items():
        if name.startswith("Fact_"):
            _reason_when_unknown(sub)

    return {
        "$schema": _DRAFT,
        "$id": schema_id(SCHEMA_VERSION),
        "title": "hwadvisor profile",
        "description": (
            f"What `hwadvisor scan` writes, schema_version {SCHEMA_VERSION}. Strict: every key "
            "the tool writes is required and no other key is allowed (hwadvisor itself reads "
            "older versions and ignores unknown keys)."
        ),
        **{k: v for k, v in doc.items() if k not in ("title", "description")},
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """The schema as ``hwadvisor schema`` prints it and the published files hold it."""
    return json.dumps(profile_schema(), indent=2) + "\n"


def packaged_schema_text() -> str | None:
    """The schema file shipped inside the package, or None where it is missing."""
    from importlib import resources

    resource = resources.files("hwadvisor.model") / SCHEMA_FILE
    if not resource.is_file():
        return None
    return resource.read_text(encoding="utf-8")


def _close(node: dict[str, Any]) -> None:
    """Make one object of the model closed: every property required, no other allowed, and
    its ``*_utc`` properties timestamps."""
    properties = node.get("properties")
    if node.get("type") != "object" or not isinstance(properties, dict):
        return
    node["required"] = list(properties)
    node["additionalProperties"] = False
    for name, prop in properties.items():
        if name.endswith("_utc"):
            _timestamp(prop)


def _timestamp(prop: dict[str, Any]) -> None:
    """A string property (or the string branch of a nullable one) as an ISO 8601 UTC time."""
    branches = prop.get("anyOf", [prop])
    for branch in branches:
        if branch.get("type") == "string":
            branch["format"] = "date-time"
            branch["pattern"] = UTC_PATTERN


def _reason_when_unknown(fact: dict[str, Any]) -> None:
    """A fact whose value is null says why (the model fills in "unknown" at the least)."""
    fact["if"] = {"properties": {"value": {"type": "null"}}}
    fact["then"] = {"properties": {"reason": {"type": "string", "minLength": 1}}}
