"""frontend-contract/operations/: the documents BudAdmin's screens send, one file per screen.

Each file is a document of its own (its fragments in it) that must validate against the schema the
code builds, with operation names unique across files: a schema change that breaks a screen fails
here, not in the UI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from graphql import OperationDefinitionNode, parse, validate

from schema.schema import schema

OPERATIONS = Path(__file__).resolve().parent.parent / "frontend-contract" / "operations"
FILES = sorted(OPERATIONS.glob("*.graphql"))
SCREENS = {
    "clusters",
    "jobs",
    "schedule",
    "job-updates",
    "quotas",
    "deployments",
    "benchmarks",
    "audit",
    "cost",
    "fleets",
}


def test_every_screen_has_its_documents() -> None:
    assert {f.stem for f in FILES} == SCREENS


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_document_validates_against_the_schema(path: Path) -> None:
    document = parse(path.read_text())
    errors = validate(schema._schema, document)
    assert not errors, [str(e) for e in errors]
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    assert operations and all(o.name is not None for o in operations)


def test_operation_names_are_unique_across_screens() -> None:
    names = [
        d.name.value
        for path in FILES
        for d in parse(path.read_text()).definitions
        if isinstance(d, OperationDefinitionNode) and d.name is not None
    ]
    assert len(names) == len(set(names)), sorted(names)
