"""JSON at the speed a fleet of 100,000 profiles needs, with the standard library's meaning.

``orjson`` (installed with the ``fleet`` extra) parses and writes several times faster than
:mod:`json`. Where it is missing, or where it refuses a document :mod:`json` accepts (``NaN``,
integers beyond 64 bits, lone surrogate escapes), :mod:`json` does the work: the result and the
errors are always :mod:`json`'s, only faster in the common case.
"""

from __future__ import annotations

import json
import re
from typing import Any

try:  # pragma: no cover - which branch runs depends on the installation
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]


#: A run of 19 digits: a number orjson might read as a float where json keeps an integer
#: (beyond 64 bits). Rare in a profile (never in one a machine wrote); then json reads it.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


#: Deeper than this, a document is refused as json refuses one nested past the recursion limit
#: (about 1,000): orjson reads any depth, and code that walks such a document would not.
MAX_DEPTH = 512


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests lists and objects more than :data:`MAX_DEPTH` deep (without
    recursion: a profile of a few thousand values takes a fraction of a millisecond)."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if type(item) is dict else item
        for child in children:
            if type(child) is dict or type(child) is list:
                push((child, depth + 1))
    return False


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, parsed by orjson where it agrees."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _orjson is not None and not _LONG_NUMBER.search(raw):
        try:
            value = _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass  # json decides, with its own message (or accepts what orjson refuses)
        else:
            if not ((type(value) is dict or type(value) is list) and _too_deep(value)):
                return value
            raise RecursionError(f"JSON nested more than {MAX_DEPTH} deep")
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
