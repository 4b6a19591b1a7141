"""Governance: who calls (identity), roles and privileges, their enforcement and audit (docs/governance.md).

- :mod:`.principals`: ``principals(tr, layout, project, user)``: the principals a user holds
  (``user:NAME``, ``group:NAME``, ``role:NAME``, nested roles expanded);
- :mod:`.policy`: a project's roles, members and grants as one in-memory snapshot, read with one
  point read per transaction (one range read when they changed);
- :mod:`.privileges`: the privileges, what implies what, securable objects and ``authorize``;
- :mod:`.grants`: grant / revoke / roles, each one transaction, audited in the change feed.
"""
