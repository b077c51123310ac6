"""schema/bounds.py, and the limits schema/admission.py refuses a document over before validation.

Covers: selections are counted as if fragments were written out, each fragment measured once (a
chain of fragments each spreading the next twice is counted in full without being written out);
aliases likewise; a fragment that spreads itself is refused; depth is the deepest field's level,
introspection's counted apart against its own limit (GraphiQL's introspection query passes, a
20-level `ofType` chain does not); one response name selected more than MAX_REPEATS times at one
place of the answer is refused, aliased or not, with the fragments and inline fragments spread
into its selection set merged, and the selection sets of fields of one response name merged, as
graphql-core merges them; fragments no operation spreads count too; every document of the
contract and of the persisted manifest is well within every limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from graphql import get_introspection_query, parse

from budcluster.http.persisted import MANIFEST
from schema import admission
from schema.bounds import CAP, FragmentCycle, Repeat, Size, most_repeated, size

CONTRACT = Path(__file__).resolve().parents[2] / "frontend-contract" / "operations"
GRAPHIQL_INTROSPECTION = get_introspection_query(
    descriptions=True,
    specified_by_url=True,
    directive_is_repeatable=True,
    schema_description=True,
    input_value_deprecation=True,
)  # GraphiQL's (graphql-js's) query: the same fragments, `ofType` nine levels deep


def code(text: str) -> str | None:
    refused = admission.measured(parse(text, max_tokens=100_000))
    return None if refused is None else str((refused.extensions or {})["code"])


def test_fragments_are_counted_as_written_out_and_measured_once() -> None:
    document = parse(
        "query { a: clusters { ...C } b: clusters { ...C } } "
        "fragment C on Cluster { id name nodes { name } }"
    )
    assert size(document) == Size(selections=10, aliases=2, depth=2, introspection_depth=2)
    links = 40
    chain = "{ ...F0 } " + " ".join(
        f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(links)
    )
    doubled = parse(chain + f" fragment F{links} on Query {{ __typename }}")
    assert size(doubled).selections == CAP  # 2^40 and more, counted, never written out
    assert code(chain + f" fragment F{links} on Query {{ __typename }}") == "FIELD_LIMIT_EXCEEDED"


def test_a_fragment_that_spreads_itself_is_refused() -> None:
    with pytest.raises(FragmentCycle):
        size(parse("{ ...A } fragment A on Query { clusters { ...B } } fragment B on Cluster "
                   "{ nodes { name } ...C } fragment C on Cluster { ...B }"))  # fmt: skip
    assert code("{ ...A } fragment A on Query { ...A }") == "GRAPHQL_VALIDATION_FAILED"


def test_depth_counts_introspection_apart() -> None:
    assert code("{ jobs { edges { node { cluster { nodes { name } } } } } }") is None
    graphiql = parse(GRAPHIQL_INTROSPECTION)
    measured = size(graphiql)
    assert measured.depth == 0 and measured.introspection_depth == 14
    assert admission.measured(graphiql) is None
    deep = "{ __schema { types { fields { type " + "{ ofType " * 16 + "{ name }" + " }" * 16
    assert code(deep + " } } } }") == "DEPTH_LIMIT_EXCEEDED"
    nested = "{ clusters " + "{ nodes " * 11 + "{ name }" + " }" * 11 + " }"
    assert code(nested) == "DEPTH_LIMIT_EXCEEDED"  # nonsense, but refused before validation


@pytest.mark.parametrize(
    "text",
    [
        "{ clusters { " + "id " * 900 + "} }",
        "{ " + "__typename " * 900 + "}",
        "{ " + "a: clusters { id } " * 15 + "}",
        "{ clusters { ... on Cluster { id } " + "...F " * 3 + " id id } } "
        "fragment F on Cluster { ... on Cluster { id id id } }",
        "{ a: clusters { nodes { name } } b: clusters { nodes { name } } }"
        "fragment Unused on Cluster { " + "name " * 11 + "}",
        "{ " + ("clusters { " + "nodes { name } " * 6 + "} ") * 2 + "}",
    ],
    ids=["plain", "typename", "aliased", "through-fragments", "unused-fragment", "merged"],
)
def test_one_response_name_many_times_in_one_selection_set_is_refused(text: str) -> None:
    assert code(text) == "FIELD_LIMIT_EXCEEDED"


def test_repeats_are_counted_in_each_merged_selection_set() -> None:
    document = parse(
        "{ clusters { ... on Cluster { id } ...F id } } fragment F on Cluster { id name }"
    )
    assert most_repeated(document) == Repeat("id", 3)
    union = "{ job(id: 1) { ... on Job { id } " + " ".join(
        f"... on Job {{ id{i}: id }}" for i in range(12)
    )
    assert most_repeated(parse(union + " } }")).times == 1  # aliases are names of their own


def test_too_many_aliases_and_fragments() -> None:
    aliases = "{ " + " ".join(f"a{i}: clusters {{ id }}" for i in range(21)) + " }"
    assert code(aliases) == "ALIAS_LIMIT_EXCEEDED"
    many = (
        "{ clusters { "
        + " ".join(f"...F{i}" for i in range(51))
        + " } } "
        + " ".join(f"fragment F{i} on Cluster {{ id }}" for i in range(51))
    )
    assert code(many) == "FIELD_LIMIT_EXCEEDED"


def documents() -> dict[str, str]:
    found = {path.name: path.read_text() for path in sorted(CONTRACT.glob("*.graphql"))}
    for digest, text in json.loads(MANIFEST.read_text()).items():
        found[f"persisted {digest[:8]}"] = text
    found["GraphiQL introspection"] = GRAPHIQL_INTROSPECTION
    return found


def test_every_real_document_is_well_within_the_limits() -> None:
    """The largest: benchmarks.graphql (329 selections), GraphiQL's introspection query (229,
    14 deep); no real document repeats a name more than twice in one selection set."""
    for name, text in documents().items():
        document = parse(text)
        measured = size(document)
        assert admission.measured(document) is None, name
        assert measured.selections <= admission.MAX_SELECTIONS // 2, (name, measured)
        assert measured.depth <= admission.MAX_DEPTH // 2, (name, measured)
        assert most_repeated(document).times <= admission.MAX_REPEATS // 4, name
