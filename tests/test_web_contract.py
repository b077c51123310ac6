"""The generated TypeScript contract and the /schedule bundle match their sources.

Covers: GraphQL Code Generator, run again from frontend-contract/schema.graphql and
operations/ into a temporary folder, gives exactly the committed frontend-contract/types/
(types, typed documents, the persisted-document manifest), and the manifest the server ships is
that one; the page's sources type-check (strict) against those types; esbuild, run again over
web/src/schedule, gives exactly the committed bundle in budcluster/schedule_page/.

Needs Node.js and web/node_modules (`./dev test` runs `npm ci` there when the lock changes).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "web"
TYPES = REPO / "frontend-contract" / "types"
PAGE = REPO / "budcluster" / "schedule_page"
BIN = WEB / "node_modules" / ".bin"
TIMEOUT = 180


def _run(*command: str) -> None:
    if not (BIN / "graphql-codegen").exists():
        pytest.fail("web/node_modules is missing: run ./dev test (it runs npm ci in web/)")
    done = subprocess.run(
        command, cwd=WEB, capture_output=True, text=True, timeout=TIMEOUT, env=dict(os.environ)
    )
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"


def _files(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.name not in skip
    }


def _assert_same_tree(made: Path, committed: Path, how: str, skip: tuple[str, ...] = ()) -> None:
    ours, theirs = _files(made), _files(committed, skip=skip)
    assert sorted(ours) == sorted(theirs), (
        f"files differ from {how}: {sorted(ours)} != {sorted(theirs)}"
    )
    stale = [name for name in ours if not filecmp.cmp(ours[name], theirs[name], shallow=False)]
    assert not stale, f"{stale} differ from what {how} makes now: run it and commit the result"


def test_generated_types_match_the_schema_and_operations(tmp_path: Path) -> None:
    config = (WEB / "codegen.yml").read_text()
    out = tmp_path / "types"
    assert "../frontend-contract/types/:" in config
    config = (
        config.replace("../frontend-contract/types/:", f"{out}/:")
        .replace(
            "../frontend-contract/schema.graphql", str(REPO / "frontend-contract/schema.graphql")
        )
        .replace(
            "../frontend-contract/operations/", str(REPO / "frontend-contract/operations") + "/"
        )
    )
    (tmp_path / "codegen.yml").write_text(config)
    _run(str(BIN / "graphql-codegen"), "--config", str(tmp_path / "codegen.yml"), "--silent")
    _assert_same_tree(out, TYPES, "`cd web && npm run codegen`")
    shipped = REPO / "budcluster" / "http" / "persisted-documents.json"
    assert shipped.read_bytes() == (out / "persisted-documents.json").read_bytes(), (
        "budcluster/http/persisted-documents.json is not the generated manifest: npm run codegen"
    )


def test_page_sources_type_check_against_the_contract() -> None:
    _run(str(BIN / "tsc"), "--noEmit", "-p", ".")


def test_committed_bundle_matches_its_sources(tmp_path: Path) -> None:
    out = tmp_path / "page"
    _run(shutil.which("node") or "node", "build.mjs", "--out", str(out))
    _assert_same_tree(out, PAGE, "`cd web && npm run build`", skip=("__init__.py",))
