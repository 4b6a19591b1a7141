"""API tokens of ``ushas serve``: ``ushas tokens create --read|--write [--name N]``, ``list``,
``revoke ID``. A token is ``ushas_<id>_<secret>``; the store keeps, under the project's
``ServiceToken`` subspace, only its id, name, access, creation and the SHA-256 of the secret (a
random 256-bit secret needs no slow hash), so a copy of the store gives no usable token. The
secret is shown once, at creation."""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, NoSuchToken
from ..keyspace.layout import SERVICE_TOKEN, TOKEN_ID

ACCESS = ("read", "write")
PREFIX = "ushas_"


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    access: str
    created_at: str
    created_by: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "access": self.access, "created_at": self.created_at,
                "created_by": self.created_by}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenStore:
    """The tokens of one metastore's project."""

    def __init__(self, metastore: Any) -> None:
        self.ms = metastore
        self.base = metastore.project_path.add(SERVICE_TOKEN)

    def _key(self, token_id: str) -> bytes:
        return bytes(self.base.add(TOKEN_ID, token_id).key())

    def create(self, access: str, name: str = "") -> tuple[TokenInfo, str]:
        """A new token: its info and the token text (shown once)."""
        if access not in ACCESS:
            raise InvalidArgument(f"access must be read or write, not {access!r}")
        if len(name) > 200 or any(ord(c) < 32 for c in name):
            raise InvalidArgument("a token name is at most 200 characters, without control characters")
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        info = TokenInfo(token_id, name, access, dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                         self.ms.user or "unknown")
        record = json.dumps({**info.to_json(), "sha256": _digest(secret)}).encode()
        self.ms.run(lambda tr: tr.set(self._key(token_id), record))
        return info, f"{PREFIX}{token_id}_{secret}"

    def list(self) -> list[TokenInfo]:
        begin, end = self.base.range()

        def scan(tr: Any) -> list[TokenInfo]:
            out = []
            for kv in tr.get_range(begin, end):
                d = json.loads(kv.value)
                out.append(TokenInfo(d["id"], d.get("name", ""), d["access"], d.get("created_at", ""),
                                     d.get("created_by", "")))
            return out

        return sorted(self.ms.run(scan), key=lambda t: (t.created_at, t.id))

    def revoke(self, token_id: str) -> TokenInfo:
        key = self._key(token_id)

        def fn(tr: Any) -> TokenInfo:
            value = tr.get(key)
            if value is None:
                raise NoSuchToken(f"no API token {token_id!r}")
            tr.clear(key)
            d = json.loads(value)
            return TokenInfo(d["id"], d.get("name", ""), d["access"], d.get("created_at", ""),
                             d.get("created_by", ""))

        return self.ms.run(fn)

    def any(self) -> bool:
        begin, end = self.base.range()
        return bool(self.ms.run(lambda tr: list(tr.get_range(begin, end, limit=1))))

    def check(self, token: str) -> str | None:
        """The access (``read`` / ``write``) a token text grants, None when it grants nothing."""
        found = self.identify(token)
        return None if found is None else found.access

    def identify(self, token: str) -> TokenInfo | None:
        """The token a token text is, None when it is unknown, revoked or mistyped."""
        if not token.startswith(PREFIX) or len(token) > 200:
            return None
        token_id, sep, secret = token[len(PREFIX):].partition("_")
        if not sep or not token_id.isalnum() or not secret:
            return None
        value = self.ms.run(lambda tr: tr.get(self._key(token_id)))
        if value is None:
            return None
        d = json.loads(value)
        if not hmac.compare_digest(d["sha256"], _digest(secret)):
            return None
        return TokenInfo(d["id"], d.get("name", ""), d["access"], d.get("created_at", ""), d.get("created_by", ""))


__all__ = ["ACCESS", "NoSuchToken", "TokenInfo", "TokenStore"]
