"""JSON at the speed a fleet of 100,000 profiles needs, with the standard library's meaning.

``orjson`` (installed with the ``fleet`` extra) parses and writes several times faster than
:mod:`json`. Where it is missing, or where it refuses a document :mod:`json` accepts (``NaN``,
integers beyond 64 bits, lone surrogate escapes), :mod:`json` does the work: the result and the
errors are always :mod:`json`'s, only faster in the common case.
"""

from __future__ import annotations

import json
from typing import Any

try:  # pragma: no cover - which branch runs depends on the installation
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]


#: Deeper than this, a document is refused as json refuses one nested past the recursion limit
#: (about 1,000): orjson reads any depth, and code that walks such a document would not.
MAX_DEPTH = 512


#: orjson reads an integer beyond 64 bits as a float of at least this size, where json keeps
#: the integer. A float that large (a workload's FLOPs) sends the document to json only where
#: its text has a run of 19 digits (found by mapping every digit to ``0``: C speed).
_BIG = 9.2e18
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _unlike_json(value: Any) -> str | None:
    """Why orjson's reading of a document may differ from json's: nested more than
    :data:`MAX_DEPTH` deep (``"deep"``), or a float of 64-bit-integer size (``"big"``); ``None``
    when it cannot. Without recursion: a profile of a few thousand values takes ~0.1 ms."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            return "deep"
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
            elif kind is float and (child >= _BIG or child <= -_BIG):
                return "big"
    return None


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, parsed by orjson where it agrees."""
    if _orjson is not None:
        try:
            value = _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass  # json decides, with its own message (or accepts what orjson refuses)
        else:
            if type(value) is dict or type(value) is list:
                why = _unlike_json(value)
            elif type(value) is float and not -_BIG < value < _BIG:
                why = "big"  # a document that is one integer beyond 64 bits
            else:
                return value
            if why == "deep":
                raise RecursionError(f"JSON nested more than {MAX_DEPTH} deep")
            raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
            if why is None or _LONG_RUN not in raw.translate(_DIGITS):
                return value
    return json.loads(text)


def dumps_line(value: Any) -> str:
    """Compact JSON of ``value`` on one line, as ``json.dumps(value)`` (ASCII escapes aside:
    orjson writes UTF-8, which every JSON reader reads as the same text)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value).decode("utf-8")
        except TypeError:
            pass  # a value orjson does not write (an integer beyond 64 bits, a lone surrogate)
    return json.dumps(value, separators=(",", ":"))


def available() -> bool:
    """Whether the fast parser is installed (benchmarks say which one they measured)."""
    return _orjson is not None
