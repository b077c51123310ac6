"""`budcluster keys generate`, run in-process.

Covers: a key written 0600 into a 0700 directory, its id printed on stdout and never its PEM; the
first key is active, a later one only with `--activate`; the default directory (BUDCLUSTER_KEYS_DIR,
else the embedded `<data dir>/keys`); production without a directory, and too small a key, fail
with exit code 2. The settings read the key variables and never show the PEM in their repr.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.secrets.keyring import ACTIVE_FILE, Keyring, generate_private_key_pem
from budcluster.cli import main
from budcluster.settings import Settings
from tests.support.logging_state import logging_kept


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("KEYS_DIR", "KEYS_PEM", "ACTIVE_KEY", "DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(f"BUDCLUSTER_{name}", raising=False)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BUDCLUSTER_DATA_DIR", str(tmp_path / "data"))
    with logging_kept():  # the CLI configures the process's logging
        yield


def generate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["keys", "generate", "--bits", "3072", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err


def test_generate_and_activate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "keys"
    code, first, err = generate(capsys, "--dir", str(directory))
    assert code == 0 and len(first) == 16 and "PRIVATE" not in first + err
    assert "key-1.pem" in err and "active" in err
    path = directory / "key-1.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert "BEGIN PRIVATE KEY" in path.read_text()

    code, second, err = generate(capsys, "--dir", str(directory))
    assert code == 0 and "not active" in err
    assert Keyring.from_directory(directory).active.key_id == first

    code, third, _ = generate(capsys, "--dir", str(directory), "--activate")
    assert code == 0 and (directory / ACTIVE_FILE).read_text().strip() == third
    ring = Keyring.from_directory(directory)
    assert ring.active.key_id == third and ring.active.version == 3
    assert {k.key_id for k in ring} == {first, second, third}


def test_default_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, embedded, _ = generate(capsys)
    assert code == 0
    assert Keyring.from_directory(tmp_path / "data" / "keys").active.key_id == embedded
    monkeypatch.setenv("BUDCLUSTER_KEYS_DIR", str(tmp_path / "configured"))
    code, configured, _ = generate(capsys)
    assert code == 0
    assert Keyring.from_directory(tmp_path / "configured").active.key_id == configured


def test_production_needs_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BUDCLUSTER_DATABASE_URL", "postgresql+asyncpg://localhost/budcluster")
    code, out, err = generate(capsys)
    assert (code, out) == (2, "") and "BUDCLUSTER_KEYS_DIR" in err
    assert not (tmp_path / "data" / "keys").exists()


def test_too_small_a_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["keys", "generate", "--dir", str(tmp_path / "keys"), "--bits", "2048"])
    _, err = capsys.readouterr()
    assert code == 2 and "at least 3072" in err
    assert not (tmp_path / "keys").exists()


def test_settings_read_the_keys_and_never_show_the_pem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem = generate_private_key_pem(bits=3072).decode()
    monkeypatch.setenv("BUDCLUSTER_KEYS_PEM", pem)
    monkeypatch.setenv("BUDCLUSTER_ACTIVE_KEY", "0123456789abcdef")
    monkeypatch.setenv("BUDCLUSTER_KEYS_DIR", str(tmp_path / "keys"))
    settings = Settings.from_env()
    assert (settings.keys_pem, settings.active_key) == (pem, "0123456789abcdef")
    assert settings.keys_dir == tmp_path / "keys"
    assert settings.generated_keys_dir == tmp_path / "data" / "keys"
    assert "PRIVATE" not in repr(settings) and pem.splitlines()[1] not in repr(settings)
    monkeypatch.setenv("BUDCLUSTER_DATABASE_URL", "postgresql+asyncpg://localhost/budcluster")
    assert Settings.from_env().generated_keys_dir is None
