"""Every command-line argument checked at the edge, before a command runs.

The operating system hands Python argv as bytes; bytes that are not UTF-8 arrive as lone
surrogates (``'\\udcff'`` for ``0xff``), which no store, name or terminal can take. Numbers
that argparse converts (``type=int`` / ``type=float``) are bounded: integers to the signed
64-bit range every store field and cursor uses, floats to finite values. A bad argument is one
line on stderr naming it and exit 2 (argparse's usage error), never a traceback.

Numbers a command parses itself from text (``--as-of``, ``--since``) go through
:func:`parse_int`, which refuses non-ASCII digits and values beyond the 64-bit range.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any, Sequence

from ..errors import InvalidArgument
from .terminal import escape

#: the range of every integer a command accepts (FoundationDB tuple integers, SQLite INTEGER)
INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
#: how much of a bad argument an error line shows
SHOWN = 60


def _byte_or_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"  # surrogateescape


def shown(text: str) -> str:
    """``text`` quoted for an error line: undecodable bytes as ``\\xff``, control characters
    escaped (:mod:`.terminal`), long values cut."""
    text = _SURROGATE.sub(_byte_or_surrogate, text)
    text = escape(text)
    return f"'{text}'" if len(text) <= SHOWN else f"'{text[:SHOWN - 8]}…{text[-4:]}'"


def text_problem(text: str) -> str | None:
    """What makes ``text`` unusable as an argument, or None."""
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            return "is not valid UTF-8 (undecodable bytes)"
        if 0xD800 <= code <= 0xDFFF:
            return "contains a lone surrogate (not valid Unicode text)"
        if code == 0:
            return "contains a NUL character"
    return None


def number_problem(value: Any) -> str | None:
    """What makes a converted number unusable, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        return "is out of range (a signed 64-bit integer)"
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number"
    return None


def _option(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_namespace(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The parsed values: numbers in range, text (including defaults from the environment, such
    as ``USHAS_URI``) valid. Exits 2 with one line otherwise."""
    for dest, value in sorted(vars(args).items()):
        for item in value if isinstance(value, (list, tuple)) else [value]:
            problem = text_problem(item) if isinstance(item, str) else number_problem(item)
            if problem is not None:
                parser.error(f"argument {_option(dest)} {shown(str(item))} {problem}")


def parse_checked(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` (``sys.argv[1:]`` when None) after checking every argument's
    text, then every converted value. A bad argument exits 2 with one line."""
    raw = list(sys.argv[1:] if argv is None else argv)
    for position, text in enumerate(raw, 1):
        if not isinstance(text, str):
            parser.error(f"argument {position} is not text: {type(text).__name__}")
        problem = text_problem(text)
        if problem is not None:
            parser.error(f"argument {position} {shown(text)} {problem}")
    args = parser.parse_args(raw)
    check_namespace(parser, args)
    return args


def parse_int(text: str, what: str, low: int = INT_MIN, high: int = INT_MAX) -> int:
    """An integer written in ASCII digits (an optional sign), between ``low`` and ``high``."""
    body = text.strip()
    digits = body[1:] if body[:1] in ("-", "+") else body
    if not (digits.isascii() and digits.isdigit()):
        raise InvalidArgument(f"{what} {shown(text)} is not an integer")
    if len(digits) > 19 or not low <= int(body) <= high:
        raise InvalidArgument(f"{what} {shown(text)} is out of range ({low}..{high})")
    return int(body)


__all__ = ["INT_MIN", "INT_MAX", "shown", "text_problem", "number_problem", "check_namespace", "parse_checked",
           "parse_int"]


#: global options that take a value (their value is not the subcommand)
GLOBAL_VALUED = ("--uri", "--project", "--user", "--token")


def route_subcommand_flag(argv: list[str], command: str, flag: str, to: str) -> list[str]:
    """``ushas [globals] COMMAND ... FLAG ...`` -> ``ushas [globals] TO ...`` (FLAG removed): a flag
    that makes a command another one (``repair --counter``, ``repair --pending``) keeps the name users
    are told while each form has its own parser."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in GLOBAL_VALUED:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        if a == command and flag in argv[i + 1:]:
            rest = list(argv[i + 1:])
            rest.remove(flag)
            return [*argv[:i], to, *rest]
        return argv
    return argv
