"""docs/sql-tables.md documents every metadata and system table and every column of each."""
from __future__ import annotations

from pathlib import Path

from ushas_catalog.sql_tables.metadata_tables import TABLES as METADATA
from ushas_catalog.sql_tables.system_tables import all_tables

DOC = Path(__file__).resolve().parents[2] / "docs" / "sql-tables.md"


def test_every_table_and_column_is_documented() -> None:
    text = DOC.read_text()
    for spelling, tables in (("ushas.<db>.<table>.", METADATA), ("ushas.system.", all_tables())):
        assert len(tables) >= 3, (spelling, tables)
        for name, tdef in tables.items():
            assert tdef.columns, name
            head = f"### `{spelling}{name}`"
            assert head in text, head
            section = text.split(head, 1)[1].split("\n### ", 1)[0]
            for column in tdef.columns:
                assert f"| `{column.name}` |" in section, (name, column.name)
