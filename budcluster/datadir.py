"""The embedded data directory is private: its directories 0700, its files 0600.

It holds the SQLite database (every tenant's jobs, sealed kubeconfigs, token hashes), the token
pepper and, unless keys are configured, the private keys that unseal the kubeconfigs. SQLite
creates its database file with the process's umask (0644 under the usual 022) and its -wal,
-shm and -journal files with the database file's mode, so the database file is made here first,
0600, and the others follow it. Files an older release left readable are narrowed at every
start. Only budcluster's own entries are touched: a data directory that holds anything else (one
pointed at a home or a shared directory) keeps its own mode, and what belongs to another user is
left alone and said in the log, as the keyring says of a readable key.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
OWN_FILES = ("budcluster.db", "token-pepper")
OWN_DIRECTORIES = ("keys",)
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def sqlite_path(database_url: str) -> Path | None:
    """The file of a `sqlite:///<path>` URL (None for PostgreSQL or an in-memory database)."""
    for prefix in ("sqlite+aiosqlite:///", "sqlite:///"):
        if database_url.startswith(prefix):
            path = database_url.removeprefix(prefix).split("?", 1)[0]
            return Path(path) if path and path != ":memory:" else None
    return None


def secure(data_dir: Path, database_url: str) -> None:
    """Make `data_dir` (and the SQLite file, wherever the URL puts it) private to this user."""
    _directory(data_dir)
    database = sqlite_path(database_url)
    if database is not None:
        _directory(database.parent)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        for suffix in SQLITE_SUFFIXES:
            _narrow(database.with_name(database.name + suffix), FILE_MODE)
    for name in OWN_FILES:
        for suffix in SQLITE_SUFFIXES if name.endswith(".db") else ("",):
            _narrow(data_dir / f"{name}{suffix}", FILE_MODE)
    for name in OWN_DIRECTORIES:
        directory = data_dir / name
        if directory.is_dir() and not directory.is_symlink():
            _narrow(directory, DIRECTORY_MODE)
            for entry in directory.iterdir():
                _narrow(entry, FILE_MODE if entry.is_file() else DIRECTORY_MODE)


def _own(name: str) -> bool:
    return name in OWN_DIRECTORIES or any(
        name == f"{own}{suffix}" for own in OWN_FILES for suffix in SQLITE_SUFFIXES
    )


def _directory(path: Path) -> None:
    """Made 0700 when new; an existing one narrowed only if it holds nothing but ours."""
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
        os.chmod(path, DIRECTORY_MODE)  # mkdir's mode is narrowed by the umask, never widened
    elif all(_own(entry.name) for entry in path.iterdir()):
        _narrow(path, DIRECTORY_MODE)


def _narrow(path: Path, mode: int) -> None:
    """Take away what group and others may do with `path`, if it is this user's."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) & 0o077 == 0:
        return
    if info.st_uid != os.getuid():
        log.warning("%s is accessible to other users and not ours to change", path)
        return
    os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
