"""Which part of an expression feeds which field: struct members and generator outputs.

Pure functions over plan expressions (:class:`~lineage.plan.Expr`), used by the resolver so
that a field taken from a struct built upstream derives from that member only, and each output
of a generator from the values that land in it:

- ``named_struct('k', a, 'q', b)`` / ``struct(a, b)``: member i is the value child ``2i + 1``;
  ``array(named_struct(...), ...)``: member i of the elements is the union of member i of each;
- ``inline(array(named_struct('k', sku, 'q', qty)))``: output k <- sku, q <- qty;
- ``explode(array(a, b))`` <- a, b; ``explode(map(k1, v1, ...))``: key <- k*, value <- v*;
  ``posexplode`` the same after the position, which has no DIRECT source when the array is
  built in place (its positions are constants);
- ``stack(n, e1, ..., em)``: output j <- e_j, e_{j+k}, ... (k outputs per row), so a label
  column of literals has no source.

``None`` means "not understood here": the caller keeps its whole-expression answer.
"""
from __future__ import annotations

from .plan import Expr

#: expression kinds that take field ``ordinal`` (the plan JSON's name slot) of a struct child
FIELD_ACCESS = frozenset({"GetStructField"})
STRUCT_BUILDERS = frozenset({"CreateNamedStruct"})
ARRAY_BUILDERS = frozenset({"CreateArray"})
MAP_BUILDERS = frozenset({"CreateMap"})
#: a struct rebuilt with fields replaced, added (``withField``) or dropped (``dropFields``)
STRUCT_UPDATES = frozenset({"UpdateFields"})

Members = list[list[Expr]]


def unalias(e: Expr) -> Expr:
    return e.children[0] if e.kind == "Alias" and e.children else e


def struct_members(e: Expr) -> Members | None:
    """The expressions feeding each member of the struct ``e`` builds (or of the structs the
    array ``e`` builds), None when ``e`` builds no struct the plan shows."""
    e = unalias(e)
    if e.kind in STRUCT_BUILDERS:
        return [[v] for v in e.children[1::2]]
    if e.kind in ARRAY_BUILDERS and e.children:
        elements = [struct_members(c) for c in e.children]
        if any(m is None for m in elements) or len({len(m) for m in elements if m is not None}) != 1:
            return None
        width = len(elements[0])  # type: ignore[arg-type]
        return [[x for m in elements for x in m[i]] for i in range(width)]  # type: ignore[index]
    return None


def struct_field_names(data_type: str | None) -> list[str] | None:
    """The top-level field names of a struct type as Spark prints it (``struct<a:int,b:struct<c:int>>``
    -> ``["a", "b"]``), None for any other type."""
    if not data_type or not data_type.startswith("struct<") or not data_type.endswith(">"):
        return None
    names: list[str] = []
    depth, start, body = 0, 0, data_type[7:-1]
    for i, ch in enumerate(body + ","):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            field = body[start:i]
            name, sep, _ = field.partition(":")
            if not sep:
                return None
            names.append(name.strip("`"))
            start = i + 1
    return names


def updated_members(e: Expr, names: list[str]) -> tuple[Expr, list[list[Expr] | None]] | None:
    """``update_fields(base, WithField(n, v)..., DropField(n)...)`` giving a struct with fields
    ``names``: (base, per field the expressions feeding it, None for a field kept from ``base``).
    None when the operations do not name their fields (an older shim)."""
    e = unalias(e)
    if e.kind not in STRUCT_UPDATES or not e.children:
        return None
    assigned: dict[str, list[Expr]] = {}
    for op in e.children[1:]:
        if op.name is None:
            return None
        if op.kind == "WithField":
            assigned[op.name] = list(op.children)
        elif op.kind == "DropField":
            assigned.pop(op.name, None)
    return e.children[0], [assigned.get(n) for n in names]


def field_ordinal(e: Expr) -> int | None:
    """The ordinal a field access takes (``GetStructField``), None when unknown."""
    if e.kind not in FIELD_ACCESS or not e.name or not e.name.isdigit():
        return None
    return int(e.name)


def generator(gen: Expr) -> Expr:
    """The generator itself (``GeneratorOuter`` unwrapped)."""
    while gen.kind == "GeneratorOuter" and gen.children:
        gen = gen.children[0]
    return gen


def generator_outputs(gen: Expr, outputs: int) -> list[list[Expr] | None] | None:
    """Per generator output, the expressions its values come from (``[]``: none, a position or
    a constant; ``None`` for one output: the whole generator), or None when not understood from
    the expression alone (e.g. ``inline`` of an attribute: see the resolver's struct members)."""
    gen = generator(gen)
    kind, children = gen.kind, gen.children
    if kind == "Stack" and len(children) > 1:
        values = list(children[1:])
        if outputs < 1:
            return None
        return [list(values[j::outputs]) for j in range(outputs)]
    if kind == "Inline" and children:
        members = struct_members(children[0])
        if members is not None and len(members) == outputs:
            return [list(m) for m in members]
        return None
    if kind in ("Explode", "PosExplode") and children:
        child = unalias(children[0])
        position: list[list[Expr] | None] = [[]] if kind == "PosExplode" else []
        rest = outputs - len(position)
        if child.kind in ARRAY_BUILDERS and rest == 1:
            return position + [list(child.children)]
        if child.kind in MAP_BUILDERS and rest == 2:
            return position + [list(child.children[0::2]), list(child.children[1::2])]
        return None  # of an attribute: every output from the whole array / map, as before
    return None


