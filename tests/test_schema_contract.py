"""frontend-contract/schema.graphql is the schema the code builds; a drift fails here.

After a deliberate schema change, regenerate it with `budcluster export-schema` and review the diff:
the UI builds on this file.
"""

from __future__ import annotations

from pathlib import Path

from schema.schema import sdl

CONTRACT = Path(__file__).resolve().parent.parent / "frontend-contract" / "schema.graphql"


def test_exported_schema_matches_the_code() -> None:
    assert CONTRACT.read_text() == sdl(), (
        "frontend-contract/schema.graphql differs from the schema in the code; "
        "run `budcluster export-schema` if the change is deliberate"
    )
