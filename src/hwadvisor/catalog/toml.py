"""Reading the data files: the packaged catalogs and users' own rules and price files.

The packaged catalogs are parsed once per content: Python's TOML parser takes 15-25 ms for each
of the larger files, ``json`` a fortieth of that, so :func:`packaged_data` keeps each parsed
file as JSON in the user's cache folder, named by the SHA-256 of the TOML text (an edited or
upgraded catalog is a new name; nothing stale is ever read). The cache is an optimisation only:
a folder that cannot be written, a full disk, or a damaged or foreign file there, and the TOML
is parsed as before. ``HWADVISOR_CACHE_DIR`` moves the folder; ``HWADVISOR_CACHE_DIR=`` (empty)
turns it off.

Validating a catalog costs more than parsing it: pydantic builds a model's validator the first
time it is used in a process (10-30 ms for the larger catalogs). :func:`packaged_plain` keeps a
catalog as plain values once validated, named by the digest of the TOML text *and* of the code
that validates and shapes it, so a changed model or validator is a new name too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 needs the tomli backport (same API)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


T = TypeVar("T")

#: What the loaders take: a file's TOML text, or a packaged catalog :func:`packaged_data` parsed.
TomlSource = str | dict[str, Any]


def packaged_text(name: str) -> str:
    """A data file shipped in ``hwadvisor.catalog`` (importlib.resources, not ``__file__``, so
    that it works from a wheel or a zip too)."""
    return resources.files("hwadvisor.catalog").joinpath(name).read_text(encoding="utf-8")


def parse_toml(text: TomlSource, origin: str, error: type[Exception]) -> dict[str, Any]:
    """TOML text as a dict (an already parsed one as it is); invalid TOML raises ``error``
    naming ``origin`` and the line."""
    if isinstance(text, dict):
        return text
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin}: not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise error(f"{origin}: nested too deeply to be a data file") from exc
    return data


def cache_dir() -> Path | None:
    """Where parsed catalogs are kept: ``HWADVISOR_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/hwadvisor``, else ``~/Library/Caches/hwadvisor`` on macOS,
    ``%LOCALAPPDATA%\\hwadvisor`` on Windows and ``~/.cache/hwadvisor`` elsewhere."""
    chosen = os.environ.get("HWADVISOR_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "hwadvisor"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "hwadvisor"
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no home directory (a bare container user)
        return None
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "hwadvisor"
    return home / ".cache" / "hwadvisor"


def packaged_data(name: str, error: type[Exception]) -> dict[str, Any]:
    """A packaged catalog parsed, through the cache (see the module's docstring)."""
    text = packaged_text(name)
    folder = cache_dir()
    if folder is None:
        return parse_toml(text, name, error)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    path = folder / f"{Path(name).stem}-{digest}.json"
    try:
        cached = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        cached = None  # none yet, unreadable or damaged: parsed again and rewritten below
    if isinstance(cached, dict) and cached.get("catalog") == name and "data" in cached:
        data = cached["data"]
        if isinstance(data, dict):
            return data
    data = parse_toml(text, name, error)
    if _write_cache(path, {"catalog": name, "data": data}):
        for old in folder.glob(f"{Path(name).stem}-*.json"):
            if old != path:  # an earlier version's parse: never read again
                with contextlib.suppress(OSError):
                    old.unlink()
    return data


def packaged_plain(
    name: str,
    error: type[Exception],
    plain: Callable[[dict[str, Any]], Any],
    code: Sequence[str],
    *,
    kind: str = "plain",
) -> Any:
    """A packaged catalog validated and reduced to plain JSON values by ``plain`` (which gets
    the parsed TOML) on the first run, kept in the cache folder after that. ``code`` names the
    source files whose content ``plain`` depends on (the model, the shared field checks): their
    digest is part of the cache file's name. Where one cannot be read (a zipped install) or
    there is no cache folder, ``plain`` runs every time. ``kind`` tells apart two things kept
    of one catalog (``gpus.plain-…``, ``gpus.names-…``).

    :func:`packaged_kept` builds the caller's objects from them, and makes them again where
    it cannot."""
    folder = cache_dir()
    digest = _code_digest(code)
    if folder is None or digest is None:
        return plain(packaged_data(name, error))
    text = packaged_text(name)
    key = hashlib.sha256(f"{text}\0{digest}".encode()).hexdigest()[:32]
    path = _plain_path(folder, name, key, kind)
    try:
        cached = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        cached = None
    if isinstance(cached, dict) and cached.get("catalog") == name and "plain" in cached:
        return cached["plain"]
    fresh = plain(packaged_data(name, error))
    if _write_cache(path, {"catalog": name, "plain": fresh}):
        for old in folder.glob(f"{Path(name).stem}.{kind}-*.json"):
            if old != path:
                with contextlib.suppress(OSError):
                    old.unlink()
    return fresh


#: What building from kept values that are damaged or foreign raises.
_DAMAGED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def packaged_kept(
    name: str,
    error: type[Exception],
    plain: Callable[[dict[str, Any]], Any],
    build: Callable[[Any], T],
    code: Sequence[str],
    *,
    kind: str = "plain",
) -> T:
    """``build`` of the values :func:`packaged_plain` keeps; where it cannot build from them
    (a damaged or foreign file), they are forgotten and made again from the TOML."""
    try:
        return build(packaged_plain(name, error, plain, code, kind=kind))
    except _DAMAGED:
        _forget(name, kind)
        return build(plain(packaged_data(name, error)))


def _forget(name: str, kind: str) -> None:
    """Remove the kept values of the packaged catalog ``name``; the next
    :func:`packaged_plain` validates the TOML again."""
    folder = cache_dir()
    if folder is not None:
        for old in folder.glob(f"{Path(name).stem}.{kind}-*.json"):
            with contextlib.suppress(OSError):
                old.unlink()


def _plain_path(folder: Path, name: str, key: str, kind: str) -> Path:
    # ``gpus.plain-….json``: not matched by the parsed-TOML cache's ``gpus-*.json`` clean-up.
    return folder / f"{Path(name).stem}.{kind}-{key}.json"


def _code_digest(code: Sequence[str]) -> str | None:
    h = hashlib.sha256()
    for file in code:
        try:
            h.update(Path(file).read_bytes())
        except OSError:
            return None
        h.update(b"\0")
    return h.hexdigest()


def _write_cache(path: Path, document: dict[str, Any]) -> bool:
    """``document`` as JSON at ``path``, whole or not at all (a temporary file renamed over
    it); false, and the cache as it was, when anything fails."""
    try:
        text = json.dumps(document, separators=(",", ":"))
    except (TypeError, ValueError):
        return False  # a value JSON cannot hold (a TOML date): this file is parsed every time
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
        temporary = None
        return True
    except OSError:
        return False
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
