"""``grant``, ``revoke``, ``show_grants`` and the roles (``create_role``, ``drop_role``, ``grant_role``,
``revoke_role``, ``show_roles``): the governance of docs/governance.md, as ``ushas grant`` / ``ushas
roles`` do it. An object argument is relative to this catalog: ``''`` (the catalog itself), ``db``,
``db.table`` (or view), ``function:db.f``, or ``*`` (the whole project)."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidName
from ..model.names import split_name
from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, from_micros, procedure

PRIVILEGE = Param("privilege", "STRING", "USE, SELECT, MODIFY, CREATE, MANAGE or OWN; on a location "
                                        "CREATE EXTERNAL TABLE, READ FILES or WRITE FILES")
OBJECT_PARAM = Param("object", "STRING", "'' (this catalog), database, database.table (or view), "
                                         "function:database.function, location:NAME, or * (the project)")
PRINCIPAL = Param("principal", "STRING", "user:NAME, group:NAME or role:NAME")
ROLE = Param("role", "STRING", "the role: NAME or role:NAME")
RESULT = [ACTION, OBJECT, DETAIL]
GRANT_ROWS = [Column("object_kind", "STRING", "project, catalog, database, table, view, function"),
              Column("object", "STRING", "the object the privilege is granted on"),
              Column("principal", "STRING", "who holds it"), Column("privilege", "STRING", "the privilege"),
              Column("granted_by", "STRING", "who granted it"),
              Column("granted_at", "TIMESTAMP", "when"),
              Column("inherited_from", "STRING", "'' (granted on the object) or the ancestor it is granted on")]


def target(call: Call, arg: str = "object") -> Any:
    """The metastore name an object argument names (``"project"`` for ``*``)."""
    text = call.args.get(arg)
    if text is None:
        raise InvalidName(f"{arg} must not be NULL ('' names this catalog, * the project)")
    text = str(text).strip()
    if text == "*":
        return "project"
    if text.lower().startswith("location:"):  # an external location: a name of the project
        return "location:" + text[len("location:"):].strip()
    if text.lower().startswith("function:"):
        parts = split_name(text[len("function:"):])
        if len(parts) == 3 and parts[0] in (call.ctx.spark_catalog, call.ctx.catalog):
            parts = parts[1:]
        if len(parts) != 2:
            raise InvalidName(f"{arg} {text!r}: expected function:database.function")
        return "function:" + ".".join(f"`{p}`" for p in (call.ctx.catalog, *parts))
    parts = split_name(text) if text else []
    if len(parts) == 3 and parts[0] in (call.ctx.spark_catalog, call.ctx.catalog):
        parts = parts[1:]
    if len(parts) > 2:
        raise InvalidName(f"{arg} {text!r}: expected '', database or database.table")
    return (call.ctx.catalog, *parts)


def _shown(name: Any) -> str:
    return name if isinstance(name, str) else ".".join(name)


@procedure("grant", "Grant a privilege on the project, this catalog, a database, table, view or function", [
    PRIVILEGE, OBJECT_PARAM, PRINCIPAL], RESULT)
def grant(call: Call) -> Outcome:
    on, privilege, who = target(call), call.required("privilege").upper(), call.required("principal")
    done = call.ms.grant(privilege, on, who)
    return Outcome([["GRANT", _shown(on), f"{privilege} to {who}" + ("" if done else " (held already)")]])


@procedure("revoke", "Revoke a privilege granted on an object (not one inherited from an ancestor)", [
    PRIVILEGE, OBJECT_PARAM, PRINCIPAL], RESULT)
def revoke(call: Call) -> Outcome:
    on, privilege, who = target(call), call.required("privilege").upper(), call.required("principal")
    done = call.ms.revoke(privilege, on, who)
    return Outcome([["REVOKE", _shown(on), f"{privilege} from {who}" + ("" if done else " (was not granted)")]])


@procedure("show_grants", "The grants that apply to an object: on it, and inherited from its ancestors", [
    Param("object", "STRING", OBJECT_PARAM.doc + "; NULL: every grant of the project", "NULL")], GRANT_ROWS)
def show_grants(call: Call) -> Outcome:
    on = None if call.args.get("object") is None else target(call)
    rows = call.ms.grants(on)
    return Outcome([[r.object_kind, r.object_name, r.principal, r.privilege, r.granted_by,
                     from_micros(r.granted_micros), r.inherited_from] for r in rows])


@procedure("create_role", "Create a role of the project", [
    ROLE, Param("comment", "STRING", "what the role is for", "NULL")], RESULT)
def create_role(call: Call) -> Outcome:
    name = str(call.required("role")).removeprefix("role:")
    done = call.ms.create_role(name, comment=call.args.get("comment") or "", if_not_exists=True)
    return Outcome([["CREATE ROLE", f"role:{name}", "created" if done else "exists already"]])


@procedure("drop_role", "Drop a role, its memberships and its grants", [ROLE], RESULT)
def drop_role(call: Call) -> Outcome:
    name = str(call.required("role")).removeprefix("role:")
    call.ms.drop_role(name)
    return Outcome([["DROP ROLE", f"role:{name}", "dropped"]])


@procedure("grant_role", "Make a user, group or role a member of a role (or of a group)", [
    ROLE, Param("member", "STRING", "user:NAME, group:NAME or role:NAME")], RESULT)
def grant_role(call: Call) -> Outcome:
    role, member = str(call.required("role")), str(call.required("member"))
    container = role if ":" in role else f"role:{role}"
    done = call.ms.grant_role(container, member)
    return Outcome([["GRANT ROLE", container, f"{member} added" if done else f"{member} was a member"]])


@procedure("revoke_role", "Remove a member from a role (or group)", [
    ROLE, Param("member", "STRING", "user:NAME, group:NAME or role:NAME")], RESULT)
def revoke_role(call: Call) -> Outcome:
    role, member = str(call.required("role")), str(call.required("member"))
    container = role if ":" in role else f"role:{role}"
    done = call.ms.revoke_role(container, member)
    return Outcome([["REVOKE ROLE", container, f"{member} removed" if done else f"{member} was not a member"]])


@procedure("show_roles", "The roles of the project and their direct members", [], [
    Column("role", "STRING"), Column("comment", "STRING"), Column("created_by", "STRING"),
    Column("members", "ARRAY<STRING>")])
def show_roles(call: Call) -> Outcome:
    return Outcome([[f"role:{r['role']}", r["comment"], r["created_by"], r["members"]] for r in call.ms.roles()])


@procedure("current_principals", "Who this catalog's caller is: its user, groups and roles", [], [
    Column("principal", "STRING")])
def current_principals(call: Call) -> Outcome:
    return Outcome([[p] for p in sorted(call.ms.principals_of())])
