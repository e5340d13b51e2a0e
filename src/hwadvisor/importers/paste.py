"""What a paste wraps around tool output, taken off before any importer reads it."""

from __future__ import annotations

import re

__all__ = ["clean_paste"]


def clean_paste(text: str) -> str:
    """What a paste wraps around tool output, taken off: Markdown code fences, ``>`` quote
    marks on every line, trailing carriage returns, HTML ``&nbsp;``."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("&nbsp;", " ").split("\n")
    lines = [line for line in lines if not line.lstrip().lstrip(">").lstrip().startswith("```")]
    quoted = [line for line in lines if line.strip()]
    if quoted and all(line.lstrip().startswith(">") for line in quoted):
        lines = [re.sub(r"^\s*>\s?", "", line) for line in lines]
    return "\n".join(lines)
