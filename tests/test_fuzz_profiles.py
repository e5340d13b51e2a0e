"""Fuzz: a real profile with any one value replaced by anything JSON can hold either loads or is
one InputError line — never another exception — and what loads renders in the terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from hwadvisor.advise import advise
from hwadvisor.errors import InputError
from hwadvisor.model.load import parse_profile
from hwadvisor.render.console import render_advice, render_summary
from hwadvisor.workloads import get_workload

BASE = json.loads(
    (Path(__file__).parent / "fixtures" / "reports" / "single-gpu.json").read_text("utf-8")
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node[:3]):
            out.extend(_paths(value, (*prefix, index)))
    return out


PATHS = _paths(BASE)
RESNET = get_workload("resnet50-imagenet")
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), VALUES)
def test_one_changed_value_loads_or_is_one_input_error(path: tuple[Any, ...], value: Any) -> None:
    text = json.dumps(_replace(BASE, path, value))
    try:
        profile = parse_profile(text, "fuzz.json")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    render_summary(profile, Console(file=io.StringIO(), width=80))
    render_advice(advise(profile, RESNET), Console(file=io.StringIO(), width=80))
