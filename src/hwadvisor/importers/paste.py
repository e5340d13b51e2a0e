"""What a paste wraps around tool output, taken off before any importer reads it."""

from __future__ import annotations

import re

__all__ = ["clean_paste", "strip_escapes"]

#: Terminal escape sequences: CSI (colours, underline: ``ESC[4m`` … ``ESC[0m``, which
#: ``nvidia-smi topo -m`` writes even into a file), OSC (window titles, links, ended by BEL or
#: ``ESC\``), and the two-character ones (``ESC(B``, ``ESC=``).
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[()][A-Za-z0-9]"
    r"|\x1b[@-_=>]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
#: An SGR sequence whose ESC was lost on the way (a web form drops it): ``[4mGPU0[0m``. At
#: least one number: a bare ``[m`` is more often text (``[mlx5_0]``) than a lost reset.
_BARE_SGR = re.compile(r"\[\d{1,3}(?:;\d{1,3}){0,4}m")
#: A Markdown code fence: three or more backticks anywhere, or tildes opening a line.
_FENCE = re.compile(r"`{3,}|^~{3,}")
#: What may follow an opening fence as its info string ("text", "console", "bash", "c++").
_INFO = re.compile(r"[A-Za-z0-9_+.#-]{1,24}")
_QUOTE_PREFIX = re.compile(r"^(\s*(?:>\s?)*)(.*)$")


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences (whole ones, and SGR ones that lost their
    ESC); any ESC left alone is dropped too."""
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text).replace("\x1b", "")
    return _BARE_SGR.sub("", text) if "m" in text and "[" in text else text


def _unfence(line: str) -> list[str]:
    """The lines ``line`` holds once its code fences are taken off: the text before a fence and
    the text after it (other than an info string) are kept, each on a line of its own."""
    bare = line.strip().lstrip(">").strip()
    if bare.startswith(("```", "~~~")):
        rest = bare.strip("`~ ")
        if not rest or _INFO.fullmatch(rest):
            return []  # a fence line, with its language name or none: the common case
    match = _QUOTE_PREFIX.match(line)
    prefix, rest = (match.group(1), match.group(2)) if match else ("", line)
    if not _FENCE.search(rest):
        return [line]
    pieces = _FENCE.split(rest)
    out = []
    for position, piece in enumerate(pieces):
        if not piece.strip():
            continue
        if position > 0 and _INFO.fullmatch(piece.strip()) and position == len(pieces) - 1:
            continue  # an opening fence's language name
        out.append(prefix + (piece if position == 0 else piece.strip()))
    return out


def _fence_hits(text: str) -> list[int]:
    """Where three backticks or tildes start, in order (plain searches: fast on a megabyte)."""
    hits = []
    for mark in ("```", "~~~"):
        at = text.find(mark)
        while at >= 0:
            hits.append(at)
            at = text.find("\n", at)
            at = text.find(mark, at) if at >= 0 else -1
    return sorted(hits)


def _unfence_text(text: str) -> str:
    """``text`` with :func:`_unfence` applied to each line that holds a fence (found by a plain
    search: a megabyte of output has a few), a line that was only a fence dropped whole."""
    pieces: list[str] = []
    pos = 0
    for hit in _fence_hits(text):
        start = text.rfind("\n", 0, hit) + 1
        if start < pos:
            continue  # a second fence on a line already done
        end = text.find("\n", hit)
        end = len(text) if end < 0 else end
        pieces.append(text[pos:start])
        kept = _unfence(text[start:end])
        if kept:
            pieces.append("\n".join(kept))
            pos = end
        else:
            pos = min(end + 1, len(text))
    pieces.append(text[pos:])
    return "".join(pieces)


def clean_paste(text: str) -> str:
    """What a paste wraps around tool output, taken off: terminal escape sequences, Markdown
    code fences wherever they sit (the text sharing their line kept), ``>`` quote marks on every
    line, trailing carriage returns, HTML ``&nbsp;``."""
    text = strip_escapes(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("&nbsp;", " ")
    if "```" in text or "~~~" in text:
        text = _unfence_text(text)
    lines = text.split("\n")
    quoted = [line for line in lines if line.strip()]
    if quoted and all(line.lstrip().startswith(">") for line in quoted):
        lines = [re.sub(r"^\s*>\s?", "", line) for line in lines]
    return "\n".join(lines)
