"""The embedded data directory is private (budcluster/datadir.py): a new one is made 0700 with
its database file 0600 before SQLite opens it; an older release's readable files and keys are
narrowed; a directory that holds other things than budcluster's keeps its own mode.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from budcluster.datadir import secure, sqlite_path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_new_data_directory_and_its_database_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    secure(data_dir, f"sqlite:///{data_dir / 'budcluster.db'}")
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "budcluster.db") == 0o600


def test_what_an_older_release_left_readable_is_narrowed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "keys").mkdir(parents=True)
    for name in ("budcluster.db", "budcluster.db-wal", "budcluster.db-shm", "token-pepper"):
        (data_dir / name).write_text("x")
        os.chmod(data_dir / name, 0o644)
    (data_dir / "keys" / "key-1.pem").write_text("x")
    os.chmod(data_dir / "keys" / "key-1.pem", 0o644)
    os.chmod(data_dir / "keys", 0o755)
    os.chmod(data_dir, 0o755)

    secure(data_dir, f"sqlite:///{data_dir / 'budcluster.db'}")

    assert mode(data_dir) == 0o700
    assert mode(data_dir / "keys") == 0o700
    assert {p.name: mode(p) for p in data_dir.rglob("*") if p.is_file()} == {
        "budcluster.db": 0o600,
        "budcluster.db-wal": 0o600,
        "budcluster.db-shm": 0o600,
        "token-pepper": 0o600,
        "key-1.pem": 0o600,
    }


def test_a_shared_directory_keeps_its_mode_and_its_other_files(tmp_path: Path) -> None:
    shared = tmp_path / "home"
    shared.mkdir()
    os.chmod(shared, 0o755)
    (shared / "notes.txt").write_text("mine")
    os.chmod(shared / "notes.txt", 0o644)

    secure(shared, f"sqlite:///{shared / 'budcluster.db'}")

    assert mode(shared) == 0o755
    assert mode(shared / "notes.txt") == 0o644
    assert mode(shared / "budcluster.db") == 0o600


def test_only_sqlite_urls_name_a_file() -> None:
    assert sqlite_path("sqlite:////var/lib/b.db") == Path("/var/lib/b.db")
    assert sqlite_path("sqlite+aiosqlite:///rel/b.db?mode=rwc") == Path("rel/b.db")
    assert sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("postgresql://u@h/db") is None
