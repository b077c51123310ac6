"""The README's `budcluster` commands, as a newcomer runs them from a fresh clone.

Covers: the `budcluster` command lives in `.venv/bin`, so the README runs it through
`./dev budcluster ...` (which sets up `.venv` as `./dev serve` does) and never as a bare
`budcluster ...` in a shell block (bare only inside the image, through `kubectl exec`);
`./dev budcluster` runs the README's own commands: `migrate`, then `token create`, which prints
a token once.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.e2e.conftest import CLI_TIMEOUT, REPO, CliResult, clean_env, printed_tokens

pytestmark = pytest.mark.e2e

SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def commands(markdown: str) -> list[str]:
    """Each command line of the shell blocks, without comments and continuation lines."""
    found = []
    for block in SHELL_BLOCK.findall(markdown):
        previous = ""
        for line in block.splitlines():
            if not previous.endswith("\\") and line.strip() and not line.startswith("#"):
                found.append(line.strip())
            previous = line.rstrip()
    return found


def program(command: str) -> str:
    """The program a command line runs (after any VAR=value assignments)."""
    words = [w for w in command.split() if not ASSIGNMENT.match(w)]
    return words[0] if words else ""


async def dev(env: dict[str, str], *args: str) -> CliResult:
    process = await asyncio.create_subprocess_exec(
        str(REPO / "dev"),
        *args,
        cwd=REPO,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    # a fresh clone installs the project into .venv first: minutes, not seconds
    out, err = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT * 10)
    return CliResult(process.returncode or 0, out.decode(), err.decode())


def test_the_readme_runs_budcluster_through_dev() -> None:
    readme = (REPO / "README.md").read_text()
    lines = commands(readme)
    assert any(program(c) == "./dev" and " budcluster token create " in c for c in lines)
    bare = [c for c in lines if program(c) == "budcluster"]
    assert bare == [], "`budcluster` is in .venv/bin, not on the PATH: write ./dev budcluster"


async def test_dev_budcluster_runs_the_readmes_commands(tmp_path: Path) -> None:
    env = clean_env(BUDCLUSTER_DATA_DIR=str(tmp_path / "data"))
    helped = await dev(env, "budcluster", "--help")
    assert helped.returncode == 0, helped
    assert "token" in helped.stdout and "keys" in helped.stdout

    migrated = await dev(env, "budcluster", "migrate")
    assert migrated.returncode == 0, migrated
    issued = await dev(env, "budcluster", "token", "create", "--name", "alice", "--new-tenant")
    assert issued.returncode == 0, issued
    assert len(printed_tokens(issued.stdout)) == 1, issued
    assert str(tmp_path / "data") in issued.stderr  # it says which database it used
