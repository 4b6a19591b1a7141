"""Stored values on a terminal: control characters shown escaped, never interpreted.

A comment, property or SQL text may hold anything a writer put there, including terminal
escape sequences (``\\x1b[31m`` colours the rest of the screen, an OSC sequence retitles the
window or writes the clipboard) and bidirectional overrides that reorder what is shown. The
CLI's text output passes every value through :func:`escape`: C0 and C1 control characters,
DEL, bidi controls and lone surrogates become ``\\x1b`` / ``\\u202e`` style escapes. ``--json``
output needs none of this (JSON escapes control characters itself).
"""
from __future__ import annotations

import re

#: C0 controls, DEL, C1 controls (CSI is 0x9b), bidi embeddings / overrides / isolates, the
#: Unicode line and paragraph separators, lone surrogates
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ud800-\udfff]")
#: the same, without newline and tab: for text laid out in lines
_UNSAFE_IN_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029"
                              "\u2066-\u2069\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(value: str) -> str:
    """One value (a table cell): every control character escaped, newlines and tabs included."""
    return _UNSAFE.sub(_escaped, value)


def escape_lines(text: str) -> str:
    """Text laid out in lines (a ``describe`` page): control characters escaped, except the
    newlines and tabs of the layout."""
    return _UNSAFE_IN_LINES.sub(_escaped, text)


__all__ = ["escape", "escape_lines"]
