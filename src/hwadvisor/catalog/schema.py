"""The one reader of hwadvisor's data files: every catalog (``gpus.toml``, ``workloads.toml``,
``calibration.toml``, ``memory_cases.toml``, ``rules.toml``, ``drivers.toml``) and users' rules
and price files is a pydantic model of :class:`DataModel` tables, read by :func:`load_toml` or
:func:`load_table`.

What every file gets from here: unknown keys refused (with the nearest known key); numbers that
are real numbers (``true`` is not a 1), finite (TOML's ``nan`` and ``inf`` refused), positive
where they must be; non-empty text; and a failure as ONE line that names the file, the entry,
the key, what was wrong and what was given::

    gpus.toml: [[gpu]] entry 3 ('H100 SXM'): key 'fp16_tflops' must be a positive number, got -1

raised as the file's own error class (``CatalogError``, ``WorkloadError``, ``RulesError`` ...).
Cross-field rules live in each file's models as validators that raise ``ValueError`` with a
one-line message; the row models sit next to the runtime types they build.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic_core import ErrorDetails, core_schema

from hwadvisor.catalog.toml import TomlSource, parse_toml

__all__ = [
    "FLAG",
    "POSITIVE_WHOLE",
    "Check",
    "DataModel",
    "Flag",
    "Fraction",
    "OptFraction",
    "OptNonNegative",
    "OptNumber",
    "OptPositive",
    "OptPositiveWhole",
    "OptText",
    "Positive",
    "PositiveWhole",
    "Text",
    "Whole",
    "choice",
    "describe",
    "distinct_entries",
    "entry_label",
    "load_table",
    "load_toml",
    "number",
    "read_text",
    "texts",
    "unique",
    "whole",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

#: Keys that name an entry of a list of tables, in the order they are looked for.
NAME_KEYS = ("name", "id", "role", "hardware")

_VALUE_ERROR = "catalog_value"
_SHOWN = 80


class DataModel(BaseModel):
    """A table of a data file: unknown keys refused, nothing coerced. A model's validator is
    built when it first reads a file (``defer_build``): a module that declares models it never
    uses pays for the declaration only."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


# --------------------------------------------------------------------------------------------
# Values: each type says what it must be, and that phrase is the error message


class Check:
    """A value type of the data files: a pydantic-core schema whose every failure reads "must
    be ``expected``". Built here once and shared by every field of the type, which keeps model
    builds (paid on every ``advise``) cheap; ``Annotated[float | None, check]`` costs no union,
    and the checks run in pydantic-core."""

    def __init__(self, expected: str, schema: core_schema.CoreSchema) -> None:
        self.expected = expected
        self._schema = core_schema.custom_error_schema(
            schema, custom_error_type=_VALUE_ERROR, custom_error_message=f"must be {expected}"
        )

    @classmethod
    def reading(cls, expected: str, read: Callable[[Any], Any]) -> Check:
        """A check written in Python: ``read`` returns the value as the program uses it, or
        ``None`` when it is wrong."""

        def validate(value: object) -> Any:
            result = read(value)
            if result is None:
                raise ValueError(expected)
            return result

        return cls(expected, core_schema.no_info_plain_validator_function(validate))

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return self._schema


def _finite(**bounds: float) -> core_schema.FloatSchema:
    # strict: an int is a number, a bool or a string is not (`fp16_tflops = true` is a mistake,
    # not a 1); TOML's nan and inf are refused.
    return core_schema.float_schema(strict=True, allow_inf_nan=False, **bounds)  # type: ignore[arg-type]


def number(expected: str, **bounds: float) -> Check:
    """A finite real number within ``bounds`` (``gt``, ``ge``, ``lt``, ``le``), as a float."""
    return Check(expected, _finite(**bounds))


def whole(expected: str, **bounds: float) -> Check:
    """A whole number within ``bounds``: ``4`` or ``4.0`` (never ``true``), as an int."""
    as_int = core_schema.no_info_after_validator_function(int, _finite(multiple_of=1, **bounds))
    exact = core_schema.int_schema(strict=True, **bounds)  # type: ignore[arg-type]
    return Check(expected, core_schema.union_schema([exact, as_int], mode="left_to_right"))


def choice(*options: str | int) -> Check:
    """One of ``options``, of their type (``scenario = true`` is not scenario 1)."""
    kind = core_schema.int_schema(strict=True) if isinstance(options[0], int) else _STRING
    literal = core_schema.literal_schema(list(options))
    return Check(
        f"one of {', '.join(map(str, options))}", core_schema.chain_schema([kind, literal])
    )


def texts(expected: str, ok: Callable[[str], bool] = lambda _: True) -> Check:
    """A non-empty list of non-empty texts for which ``ok`` holds, as a tuple."""

    def read(value: list[str]) -> tuple[str, ...]:
        if not all(ok(v) for v in value):
            raise ValueError(expected)
        return tuple(value)

    items = core_schema.list_schema(_TEXT, min_length=1, strict=True)
    return Check(expected, core_schema.no_info_after_validator_function(read, items))


_STRING = core_schema.str_schema(strict=True)
_TEXT = core_schema.str_schema(strict=True, strip_whitespace=True, min_length=1)

POSITIVE = number("a positive number", gt=0)
NON_NEGATIVE = number("a non-negative number", ge=0)
FRACTION = number("a fraction in (0, 1]", gt=0, le=1)
NUMBER = number("a finite number")
WHOLE = whole("a whole number >= 0", ge=0)
POSITIVE_WHOLE = whole("a positive whole number", gt=0)
TEXT = Check("non-empty text", _TEXT)
FLAG = Check("true or false", core_schema.bool_schema(strict=True))

# The types of fields; ``Opt...`` ones may be left out (default ``None``).
Positive = Annotated[float, POSITIVE]
OptPositive = Annotated[float | None, POSITIVE]
OptNonNegative = Annotated[float | None, NON_NEGATIVE]
Fraction = Annotated[float, FRACTION]
OptFraction = Annotated[float | None, FRACTION]
OptNumber = Annotated[float | None, NUMBER]
Whole = Annotated[int, WHOLE]
PositiveWhole = Annotated[int, POSITIVE_WHOLE]
OptPositiveWhole = Annotated[int | None, POSITIVE_WHOLE]
Text = Annotated[str, TEXT]
OptText = Annotated[str | None, TEXT]
Flag = Annotated[bool, FLAG]


# --------------------------------------------------------------------------------------------
# Loading


def read_text(path: Path, error: type[Exception]) -> str:
    """A user's file as text, through the one input reader (regular files only, a size cap,
    UTF-8 or UTF-16): a named pipe, a device, a folder or a binary file raises ``error``."""
    from hwadvisor.errors import InputError
    from hwadvisor.inputfile import read_input

    try:
        return read_input(path)
    except InputError as exc:
        raise error(str(exc)) from exc


def load_toml(model: type[M], text: TomlSource, origin: str, error: type[Exception]) -> M:
    """TOML text (or a packaged catalog already parsed) as ``model``: invalid TOML or invalid
    data raise ``error`` naming ``origin``."""
    return load_table(model, parse_toml(text, origin, error), origin, error, whole_file=True)


def load_table(
    model: type[M], data: object, where: str, error: type[Exception], *, whole_file: bool = False
) -> M:
    """``data`` (a TOML table) validated as ``model``; otherwise ``error`` with one line that
    starts with ``where`` and names the entry and key of the first problem. ``whole_file``:
    ``data`` is a file's top level (its unknown keys are "top-level" ones)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(describe(model, data, exc.errors(), where, whole_file)) from None


def unique(names: Iterable[str], what: str) -> None:
    """For a file's validator: ``ValueError`` when a name comes twice (``what`` names it)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} appears more than once")
        seen.add(name)


def distinct_entries(rows: Sequence[T], table: str, name_of: Callable[[T], str], what: str) -> None:
    """For a file's validator: ``ValueError`` when the file has no ``[[table]]`` entries, or
    when two of them share a name (``what`` names it)."""
    if not rows:
        raise ValueError(f"no [[{table}]] tables")
    unique((name_of(row) for row in rows), what)


def entry_label(table: str, index: int, row: object) -> str:
    """``[[gpu]] entry 3 ('H100 SXM')``: the entry's 1-based position and, where the row has
    one, its name."""
    label = f"[[{table}]] entry {index}"
    if isinstance(row, dict):
        name = next((row[k] for k in NAME_KEYS if isinstance(row.get(k), str)), None)
        if name is not None:
            label += f" ({name!r})"
    return label


# --------------------------------------------------------------------------------------------
# One line from a ValidationError

_PRIORITY = {"extra_forbidden": 0, "missing": 1}


def _first(errors: Sequence[ErrorDetails]) -> ErrorDetails:
    """The first problem pydantic met (entries come in file order); among those of one table,
    an unknown key first (a typo also reads as a missing key), then a missing one."""
    parent = errors[0]["loc"][:-1]
    same = [e for e in errors if e["loc"][:-1] == parent]
    return min(same, key=lambda e: _PRIORITY.get(e["type"], 2))


def _shown(value: object) -> str:
    if isinstance(value, bool):  # as the file says it
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _keys_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys the table at ``loc`` may have (for "did you mean")."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue
        assert current is not None
        fields = {f.alias or n: f for n, f in current.model_fields.items()}
        current = _model_of(fields[part].annotation) if part in fields else None
        if current is None:
            return []
    assert current is not None
    return [f.alias or n for n, f in current.model_fields.items()]


def _hint(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    if known and len(known) <= 6:
        return f" (known: {', '.join(known)})"
    return ""


def _child(node: object, part: int | str) -> object:
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None


def describe(
    model: type[BaseModel],
    data: object,
    errors: Sequence[ErrorDetails],
    where: str,
    whole_file: bool = False,
) -> str:
    """The first of pydantic's ``errors`` as one line: ``where``, the entry, the key, what was
    wrong, what was given."""
    error = _first(errors)
    loc = error["loc"]
    places: list[str] = [where]
    path: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int):
            places.append(entry_label(".".join(path), part + 1, _child(node, part)))
            path = []
        else:
            path.append(part)
        node = _child(node, part)
    place = ": ".join(places)
    named = bool(path) and path[-1] == "[key]"  # a table's key name itself is wrong
    if named:
        path.pop()
    key = ".".join(path)
    kind = error["type"]
    given = f", got {_shown(error['input'])}"
    if kind == "extra_forbidden":
        top = "top-level " if whole_file and len(loc) == 1 else ""
        return f"{place}: unknown {top}key {key!r}{_hint(path[-1], _keys_at(model, loc[:-1]))}"
    if kind == "missing":
        return f"{place}: missing key {key!r}"
    if kind == "value_error":  # a cross-field rule of the model: its own one-line message
        message = " ".join(str(error.get("ctx", {}).get("error", error["msg"])).split())
        return f"{place}: {key}: {message}" if key else f"{place}: {message}"
    subject = f"the name of key {key!r} " if named else f"key {key!r} " if key else ""
    if kind == _VALUE_ERROR:
        return f"{place}: {subject}{error['msg']}{given}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{place}: {subject}must be a table{given}"
    if kind == "list_type":
        return f"{place}: {subject}must be a list of tables{given}"
    return f"{place}: {subject}{error['msg'].lower()}{given}"
