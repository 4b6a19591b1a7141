"""Grants and roles as metastore operations (``Metastore.grant`` ...): each one transaction that checks
who may make it (:mod:`.authorization`), changes the policy and records the change-feed event.

Who may: granting or revoking a privilege on an object needs MANAGE on it (OWN to grant or revoke OWN
or MANAGE); roles and their members need MANAGE on the project. A caller whose calls are not checked
(authorization off: the store's administrator, e.g. the CLI with no ``--user``) may do all of it: that
is how the first administrator is made (``ushas grant OWN ON PROJECT TO user:alice``).
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..governance import grants as g
from ..governance import policy as policies
from ..governance.privileges import MANAGE, OWN, USE, privilege as parse_privilege
from ..kv.base import Transaction
from .authorization import ANYONE, OBJECT, PROJECT, Requirement, check, requiring, securable
from .base import MetastoreBase


def _privilege(text: str) -> str:
    try:
        return parse_privilege(text)
    except ValueError as e:
        raise InvalidArgument(str(e)) from None


class AccessOps(MetastoreBase):
    """Grants, revokes, roles and their listings."""

    def _access(self, req: Requirement, fn: Any) -> Any:
        with requiring(req):
            return self.run(fn)

    def _record(self, tr: Transaction, event: dict[str, Any] | None) -> None:
        if event is not None:
            self.hooks.removed(tr, **event)

    def grant(self, privilege: str, on: Any, to: str) -> bool:
        """``to`` (``user:bob``, ``group:g``, ``role:r``) gets ``privilege`` on ``on`` (``"project"``, a
        catalog, database, table / view name, or ``"function:c.d.f"``). False: it held it already."""
        p, who = _privilege(privilege), g.principal(to)
        need = OWN if p in (OWN, MANAGE) else MANAGE

        def fn(tr: Transaction) -> bool:
            target = securable(tr, self.resolver, OBJECT, on)
            self._require_exists(target, on)
            event = g.grant(tr, self.layout, self.project, target, p, who, by=self.caller().principal)
            self._record(tr, event)
            return event is not None

        return bool(self._access(Requirement(need, OBJECT, on), fn))

    def revoke(self, privilege: str, on: Any, frm: str) -> bool:
        """``frm`` loses ``privilege`` granted on ``on`` itself. False: it was not granted there."""
        p, who = _privilege(privilege), g.principal(frm)
        need = OWN if p in (OWN, MANAGE) else MANAGE

        def fn(tr: Transaction) -> bool:
            target = securable(tr, self.resolver, OBJECT, on)
            self._require_exists(target, on)
            event = g.revoke(tr, self.layout, self.project, target, p, who, by=self.caller().principal)
            self._record(tr, event)
            return event is not None

        return bool(self._access(Requirement(need, OBJECT, on), fn))

    def grants(self, on: Any = None) -> list[g.GrantRow]:
        """The grants that apply to ``on`` (on it and inherited from its ancestors); None: every grant
        of the project (needs MANAGE on the project when authorization is on)."""
        def fn(tr: Transaction) -> list[g.GrantRow]:
            p = policies.load(tr, self.layout, self.project)
            if on is None:
                return g.rows(p)
            target = securable(tr, self.resolver, OBJECT, on)
            self._require_exists(target, on)
            return g.rows(p, target)

        req = Requirement(MANAGE, PROJECT) if on is None else Requirement(USE, OBJECT, on)
        return list(self._access(req, fn))

    def create_role(self, name: str, *, comment: str = "", if_not_exists: bool = False) -> bool:
        def fn(tr: Transaction) -> bool:
            event = g.create_role(tr, self.layout, self.project, name, by=self.caller().principal, comment=comment,
                                  if_not_exists=if_not_exists)
            self._record(tr, event)
            return event is not None

        return bool(self._access(Requirement(MANAGE, PROJECT), fn))

    def drop_role(self, name: str) -> None:
        self._access(Requirement(MANAGE, PROJECT), lambda tr: self._record(
            tr, g.drop_role(tr, self.layout, self.project, name, by=self.caller().principal)))

    def grant_role(self, role: str, member: str) -> bool:
        """``member`` joins ``role`` (``role:R`` or ``R``; also ``group:G``). False: it was a member."""
        container = role if ":" in role else f"role:{role}"

        def fn(tr: Transaction) -> bool:
            event = g.add_member(tr, self.layout, self.project, container, member, by=self.caller().principal)
            self._record(tr, event)
            return event is not None

        return bool(self._access(Requirement(MANAGE, PROJECT), fn))

    def revoke_role(self, role: str, member: str) -> bool:
        container = role if ":" in role else f"role:{role}"

        def fn(tr: Transaction) -> bool:
            event = g.remove_member(tr, self.layout, self.project, container, member, by=self.caller().principal)
            self._record(tr, event)
            return event is not None

        return bool(self._access(Requirement(MANAGE, PROJECT), fn))

    def roles(self) -> list[dict[str, Any]]:
        """Every role of the project with its direct members."""
        return list(self._access(Requirement(USE, PROJECT),
                                 lambda tr: g.roles(policies.load(tr, self.layout, self.project))))

    def principals_of(self, user: str | None = None) -> frozenset[str]:
        """The principals ``user`` (default: the caller) holds: ``user:``, its groups and roles."""
        from ..governance.principals import principals

        who = user or self.caller().user
        req = Requirement(ANYONE, PROJECT) if who == self.caller().user else Requirement(MANAGE, PROJECT)
        return frozenset(self._access(req, lambda tr: principals(tr, self.layout, self.project, who)))

    def authorize(self, tr: Transaction, privilege: str, kind: str, name: Any) -> None:
        """In ``tr``: raise PermissionDenied unless the current caller holds ``privilege`` on the object
        ``name`` of ``kind`` (``"project"``, ``"catalog"``, ``"database"``, ``"relation"``, ``"function"``,
        or ``"object"``: by its number of name parts); nothing when the caller is not checked."""
        caller = self.caller()
        if caller.authorization:
            check(tr, self, caller, Requirement(privilege, kind, name))

    def may(self, privilege: str, kind: str, name: Any) -> bool:
        """Whether the caller holds ``privilege`` on the object ``name`` of ``kind`` (as :meth:`authorize`);
        True when its calls are not checked. Refuses nothing and records nothing: for listings that show
        only what the caller may see (the system tables)."""
        from ..errors import PermissionDenied

        caller = self.caller()
        if not caller.authorization:
            return True

        def fn(tr: Transaction) -> bool:
            try:
                check(tr, self, caller, Requirement(privilege, kind, name))
            except PermissionDenied:
                return False
            return True

        return bool(self.run(fn))

    @staticmethod
    def _require_exists(target: Any, on: Any) -> None:
        from ..errors import NotFound

        if not target.exists:
            raise NotFound(f"{target.kind} {target.name} does not exist", object=str(on))
