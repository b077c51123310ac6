"""domain.documents: the first flaw of a free-form document, and where it is.

Covers: depth counted by containers (a document at the limit passes); values counted as reached,
so shared (aliased) values count each time; keys must be text; lone surrogates always, NUL only
where not allowed; paths as `a.b[2]`; a document far deeper than the stack is no problem to walk.
"""

from __future__ import annotations

from typing import Any

from domain.documents import Flaw, Problem, document_problem


def nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_depth_and_count() -> None:
    assert document_problem(nested(3), max_depth=3) is None
    assert document_problem(nested(4), max_depth=3) == Problem(Flaw.TOO_DEEP, "a.a.a")
    assert document_problem(nested(100_000), max_depth=64) == Problem(
        Flaw.TOO_DEEP, ".".join(["a"] * 64)
    )
    shared = ["x"] * 10
    bomb = {"b": [shared] * 10}  # 111 values once expanded, 12 as objects
    assert document_problem(bomb, max_depth=8, max_values=100) == Problem(Flaw.TOO_MANY, "b[1][0]")
    assert document_problem(bomb, max_depth=8, max_values=200) is None


def test_keys_and_text() -> None:
    assert document_problem({1: "x"}, max_depth=4) == Problem(Flaw.KEY_NOT_TEXT, "")
    assert document_problem({"a": ["ok", "\ud800"]}, max_depth=4) == Problem(Flaw.SURROGATE, "a[1]")
    assert document_problem({"a": {"\udfff": 1}}, max_depth=4) == Problem(Flaw.SURROGATE, "a")
    assert document_problem({"a": "x\x00"}, max_depth=4) is None
    assert document_problem({"a": "x\x00"}, max_depth=4, allow_nul=False) == Problem(Flaw.NUL, "a")
    assert document_problem({"emoji": "\U0001f600", "n": [1, 2.5, None, True]}, max_depth=4) is None
