"""The project as a whole: drop it (one ``clear_range``) and count its keys and bytes per subspace."""
from __future__ import annotations

from ..model.objects import SubspaceStats
from .base import MetastoreBase


class ProjectOps(MetastoreBase):
    """The project as a whole."""

    def drop_project(self) -> None:
        """Delete everything of this project: one clear_range."""
        self.run(lambda tr: tr.clear_range(*self.project_path.range()))

    def stats(self, all_projects: bool = False, batch: int = 50_000) -> list[SubspaceStats]:
        """Keys and bytes (key + value) per subspace (the deepest named constant
        directory of each key, found by parsing it with the key space) per project.
        Reads in batches of ``batch`` keys, one transaction each."""
        ks = self.layout.keyspace
        begin, end = ks.range() if all_projects else self.project_path.range()
        counts: dict[tuple[str, str], list[int]] = {}
        while True:
            rows = self.run(lambda tr: [(kv.key, len(kv.value)) for kv in tr.get_range(begin, end, limit=batch)])
            for key, size in rows:
                try:
                    resolved = ks.parse(key)
                    project = resolved.path.find("project").value if resolved.path else "?"
                    subspace = next((p.directory.name for p in reversed(resolved.path.lineage())
                                     if p.directory.is_constant), "project") if resolved.path else "?"
                except Exception:  # noqa: BLE001 - a foreign key in the range: count it, do not fail
                    project, subspace = "?", "(unparsed)"
                c = counts.setdefault((project, subspace), [0, 0])
                c[0] += 1
                c[1] += len(key) + size
            if len(rows) < batch:
                break
            begin = rows[-1][0] + b"\x00"
        return [SubspaceStats(p, s, k, b) for (p, s), (k, b) in sorted(counts.items())]
