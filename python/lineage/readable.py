"""Spark's internals out of every text a person reads: THE function every user-facing output of lineage
calls on an expression (the CLI, the UI and REST API, the system and metadata tables, ``df.lineage()``,
``ushas lineage sql``, OpenLineage exports).

Spark renders an analyzed plan's expressions with expression ids (``sum(amount#36) AS revenue#61``,
``dt#37``, ``count(1)#45L``) and names in-memory relations by plan node (``LogicalRDD@0``): what a
person wrote is ``sum(amount) AS revenue``. Resolution keeps what Spark gave (ids tell equal names apart
while composing expressions); a result's edges and dict, and every output, show :func:`readable` text (the
store's readers too, for runs stored with Spark's text)."""
from __future__ import annotations

import re

#: an expression id after a name, a closing quote, parenthesis or bracket: ``#36``, ``#45L`` (a long)
_EXPR_ID = re.compile(r"(?<=[\w`)\]])#\d+L?(?![\w#])")
#: a string literal of an expression (SQL's single quotes): left as written (renderings put their labels in
#: double quotes, so those are cleaned)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'")
#: in-query relations named by their plan node: ``LogicalRDD@0`` (a DataFrame of an RDD or of local rows
#: made in Python), ``ExternalRDD@2``, ``VALUES@3``
_NODE_NAME = re.compile(r"\b(LogicalRDD|ExternalRDD|VALUES)@\d+\b")
_NODE_TEXT = {"LogicalRDD": "in-memory data", "ExternalRDD": "in-memory data", "VALUES": "VALUES"}


def readable(text: str) -> str:
    """``text`` without expression ids and plan node names, quoted parts left as they are::

        readable("sum(amount#36) AS revenue#61")  == "sum(amount) AS revenue"
        readable("<LogicalRDD@0>.x")              == "<in-memory data>.x"
        readable("concat(a#1, '#2')")             == "concat(a, '#2')"
    """
    if "#" not in text and "@" not in text:
        return text
    out, last = [], 0
    for m in _QUOTED.finditer(text):
        out.append(_clean(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_clean(text[last:]))
    return "".join(out)


def _clean(part: str) -> str:
    part = _EXPR_ID.sub("", part)
    return _NODE_NAME.sub(lambda m: _NODE_TEXT[m.group(1)], part)


def readable_dataset(name: str) -> str:
    """A dataset's display name: an in-query relation (``<LogicalRDD@0>``) readable; tables and paths (which
    may hold ``#`` or ``@``) as they are."""
    return readable(name) if name.startswith("<") else name


__all__ = ["readable", "readable_dataset"]
