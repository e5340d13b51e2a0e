"""The fast JSON path reads and writes exactly what the standard library does."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hwadvisor.model import fastjson

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_values)
@example(-9_223_372_036_854_775_809)  # a document that is one integer beyond 64 bits
@example(2**64)
def test_round_trip_matches_the_standard_library(value: object) -> None:
    text = json.dumps(value)
    assert fastjson.loads(text) == json.loads(text)
    assert json.loads(fastjson.dumps_line(value)) == value


@pytest.mark.parametrize(
    "text",
    ["NaN", '{"a": Infinity}', '"\\ud800"', str(2**65), '{"a": 1, "a": 2}'],
)
def test_what_orjson_refuses_json_still_reads(text: str) -> None:
    got, want = fastjson.loads(text), json.loads(text)
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want


@pytest.mark.parametrize("text", ["{", '{"a": }', "1" * 5000, "[" * 100_000])
def test_errors_are_the_standard_librarys(text: str) -> None:
    with pytest.raises((ValueError, RecursionError)) as fast:
        fastjson.loads(text)
    with pytest.raises((ValueError, RecursionError)) as slow:
        json.loads(text)
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)


def test_writes_what_orjson_cannot() -> None:
    assert json.loads(fastjson.dumps_line({"n": 2**80})) == {"n": 2**80}
    assert fastjson.dumps_line("\ud800") == json.dumps("\ud800", separators=(",", ":"))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 5_000 + "1" + "}" * 5_000,
        '[{"a": ' * 2_000 + "1" + "}]" * 2_000,
    ],
)
def test_deep_nesting_is_refused_as_json_refuses_it(text: str) -> None:
    with pytest.raises(RecursionError):
        json.loads(text)
    with pytest.raises(RecursionError):
        fastjson.loads(text)


def test_nesting_within_the_limit_is_read() -> None:
    text = "[" * fastjson.MAX_DEPTH + "]" * fastjson.MAX_DEPTH
    assert fastjson.loads(text) == json.loads(text)
