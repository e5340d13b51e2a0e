"""JSON as people paste it: whole, or cut off part-way (issue trackers fold long output)."""

from __future__ import annotations

import json
from typing import Any

#: Deeper than any tool's output nests; a hostile file nested deeper is not read.
MAX_DEPTH = 200


def load_json_prefix(text: str) -> tuple[Any, str | None]:
    """``(document, cut)``: the JSON document ``text`` is, or — when it is cut off — the part
    before the cut with every open array and object closed, and ``cut`` saying where it ended.
    ``(None, None)`` for text that is not JSON at all (or nests deeper than :data:`MAX_DEPTH`)."""
    try:
        return json.loads(text), None
    except RecursionError:
        return None, None
    except ValueError as exc:
        error = exc
    if not isinstance(error, json.JSONDecodeError):
        return None, None
    if error.msg == "Extra data":
        # A document followed by something else (a second paste, a prompt): the first one.
        try:
            return json.loads(text[: error.pos]), None
        except (ValueError, RecursionError):
            return None, None
    closed = _close_prefix(text)
    if closed is None:
        return None, None
    try:
        document = json.loads(closed)
    except (ValueError, RecursionError):
        return None, None
    line = text.count("\n", 0, len(text.rstrip())) + 1
    return document, f"the JSON ends unclosed at line {line}"


def _close_prefix(text: str) -> str | None:
    """``text`` up to its last complete value, with the open brackets closed; None when no
    bracket was ever opened or the text is not JSON-like."""
    stack: list[str] = []
    in_string = False
    escaped = False
    # Positions after which the document can be closed: after a complete value inside a
    # container (so a cut key or a half-written string is dropped with its comma).
    last_good: tuple[int, int] | None = None  # (end index, stack depth)
    good_stack: list[str] = []
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if stack and stack[-1] == "[":
                    last_good, good_stack = (index + 1, len(stack)), list(stack)
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
            if len(stack) > MAX_DEPTH:
                return None
            last_good, good_stack = (index + 1, len(stack)), list(stack)
        elif char in "}]":
            if not stack:
                return None
            stack.pop()
            last_good, good_stack = (index + 1, len(stack)), list(stack)
        elif char == ",":
            last_good, good_stack = (index, len(stack)), list(stack)
        elif not stack and not char.isspace():
            return None
    if last_good is None or not good_stack:
        return None
    # A value that ended at the cut (a number, true) is kept only if it ends in a closer
    # or a string: simplest safe rule, cut back to the last comma or bracket.
    cut = text[: last_good[0]].rstrip()
    if cut.endswith(","):
        cut = cut[:-1]
    if cut.endswith(":"):
        return None
    closers = "".join("}" if c == "{" else "]" for c in reversed(good_stack))
    return cut + closers
