"""The JSON Schema of the profile that ``scan`` writes (``hwadvisor schema``)."""

from __future__ import annotations

from typing import Any


def profile_schema() -> dict[str, Any]:
    """The profile's JSON Schema (draft 2020-12)."""
    from hwadvisor.model.profile import SCHEMA_VERSION, Profile

    doc = Profile.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "hwadvisor profile",
        "description": f"hwadvisor profile, schema_version {SCHEMA_VERSION}",
        **{k: v for k, v in doc.items() if k not in ("title", "description")},
    }
