"""Host labels: ``site=a``, ``rack=r12``, ``group=gpu`` — where a machine stands, as the people
who run it name it (Ansible inventory groups, Slurm partitions, Kubernetes node labels).

Set at scan time (``hwadvisor scan --label KEY=VALUE``, or ``HWADVISOR_LABELS="site=a,rack=r12"``)
and kept in the profile's ``host.labels``; the fleet stores them and exports ``site``, ``rack``
and ``group`` as columns (a Parquet export can be partitioned by them, so a value becomes a
folder name: hence the narrow syntax).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: The environment variable a collector sets instead of ``--label``.
LABELS_ENV = "HWADVISOR_LABELS"
#: A key: lower-case letters, digits, ``_ . -``; 1 to 63 characters.
KEY_PATTERN = r"[a-z0-9_.-]{1,63}"
#: A value: letters, digits, ``_ . -``; up to 63 characters (a Kubernetes label value's size).
VALUE_PATTERN = r"[A-Za-z0-9_.-]{0,63}"
#: At most this many labels on one host.
MAX_LABELS = 32

_KEY = re.compile(KEY_PATTERN)
_VALUE = re.compile(VALUE_PATTERN)


class LabelError(ValueError):
    """A label that is not ``KEY=VALUE`` with the syntax above."""


def parse_label(text: str) -> tuple[str, str]:
    """``"site=a"`` as ``("site", "a")``; :class:`LabelError` saying what is wrong otherwise."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep:
        raise LabelError(f"{text!r} is not KEY=VALUE (e.g. site=a)")
    if not _KEY.fullmatch(key):
        raise LabelError(
            f"label key {key!r}: use 1 to 63 lower-case letters, digits, '_', '.' or '-'"
        )
    if not _VALUE.fullmatch(value):
        raise LabelError(
            f"label {key}={value!r}: a value is up to 63 letters, digits, '_', '.' or '-'"
        )
    return key, value


def parse_labels(items: Iterable[str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels of ``HWADVISOR_LABELS`` in ``env`` (comma-separated), then ``items`` (each
    ``KEY=VALUE``; a later one replaces an earlier one of the same key), sorted by key."""
    found: dict[str, str] = {}
    env_text = (env or {}).get(LABELS_ENV, "")
    for part in env_text.split(","):
        if part.strip():
            try:
                key, value = parse_label(part)
            except LabelError as exc:
                raise LabelError(f"{LABELS_ENV}: {exc}") from exc
            found[key] = value
    for item in items:
        key, value = parse_label(item)
        found[key] = value
    if len(found) > MAX_LABELS:
        raise LabelError(f"{len(found)} labels: at most {MAX_LABELS}")
    return dict(sorted(found.items()))


def clean_labels(value: Any) -> dict[str, str] | None:
    """The labels a profile carries, as read from a file that may be anything: the well-formed
    ones (sorted, at most :data:`MAX_LABELS`); ``None`` where there are none."""
    if not isinstance(value, dict):
        return None
    out = {
        k: v
        for k, v in value.items()
        if isinstance(k, str) and isinstance(v, str) and _KEY.fullmatch(k) and _VALUE.fullmatch(v)
    }
    return dict(sorted(out.items())[:MAX_LABELS]) or None
