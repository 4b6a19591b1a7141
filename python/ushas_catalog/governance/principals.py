"""The principals a user holds: ``user:NAME`` and every ``group:`` / ``role:`` it belongs to,
directly or through nested roles (other modules call :func:`principals`)."""
from __future__ import annotations

from ..keyspace.layout import Layout
from ..kv.base import Transaction
from . import policy

KINDS = ("user", "group", "role")


def principals(tr: Transaction, layout: Layout, project: str, user: str) -> frozenset[str]:
    """``user:<user>`` and the groups and roles (nested roles expanded) it belongs to in ``project``,
    read in ``tr`` (one point read; one range read after a change of roles or grants)."""
    return of_policy(policy.load(tr, layout, project), user)


def of_policy(p: policy.Policy, user: str) -> frozenset[str]:
    return p.expand(frozenset({f"user:{user}"}))


def parse(text: str) -> tuple[str, str]:
    """``"role:analysts"`` -> ``("role", "analysts")``; raises ValueError on another shape."""
    kind, sep, name = text.partition(":")
    if not sep or kind not in KINDS or not name or name != name.strip():
        raise ValueError(f"principal {text!r} is not user:NAME, group:NAME or role:NAME")
    return kind, name
