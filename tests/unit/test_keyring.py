"""The keyring (adapters/secrets/keyring.py).

Covers: key ids derived from the public key; loading from a directory of `key-<version>.pem`
files and from PEM text (concatenated, or with `\\n` escapes); choosing the active key (argument
over ACTIVE file over the only key) and the errors for an unknown or ambiguous active key; weak,
non-RSA, encrypted and malformed keys refused without echoing them; new key files are 0600 in a
0700 directory, versions count up, and adding a key keeps the active one unless asked;
`load_or_create` generates a first key for the embedded run and names the settings in production.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from adapters.secrets.keyring import (
    ACTIVE_FILE,
    Keyring,
    KeyringError,
    generate_private_key_pem,
    key_id_of,
    load_or_create,
    write_new_key,
)


@pytest.fixture(scope="module")
def keys() -> list[rsa.RSAPrivateKey]:
    return [rsa.generate_private_key(public_exponent=65537, key_size=3072) for _ in range(2)]


@pytest.fixture(scope="module")
def pems(keys: list[rsa.RSAPrivateKey]) -> list[str]:
    return [_pem(key).decode() for key in keys]


@pytest.fixture(scope="module")
def ids(keys: list[rsa.RSAPrivateKey]) -> list[str]:
    return [key_id_of(key.public_key()) for key in keys]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def put(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_key_id_is_derived_from_the_public_key(pems: list[str], ids: list[str]) -> None:
    ring = Keyring.from_pem_text(pems[0])
    der = ring.active.public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert ring.active.key_id == ids[0] == hashlib.sha256(der).hexdigest()[:16]
    assert ids[0] != ids[1] and len(ids[0]) == 16


def test_from_pem_text(pems: list[str], ids: list[str]) -> None:
    ring = Keyring.from_pem_text("\n".join(pems), active=ids[1])
    assert [(k.key_id, k.version) for k in ring] == [(ids[0], 1), (ids[1], 2)]
    assert ring.active.key_id == ids[1] and len(ring) == 2
    assert ring.get(ids[0]) is not None and ring.get("0" * 16) is None
    escaped = "".join(pems).replace("\n", "\\n")
    assert Keyring.from_pem_text(escaped, active=ids[0]).active.key_id == ids[0]


def test_from_directory(tmp_path: Path, pems: list[str], ids: list[str]) -> None:
    put(tmp_path, "key-1.pem", pems[0])
    put(tmp_path, "key-7.pem", pems[1])
    (tmp_path / "README").write_text("not a key, ignored")
    with pytest.raises(KeyringError, match="none is named active"):
        Keyring.from_directory(tmp_path)
    (tmp_path / ACTIVE_FILE).write_text(ids[1] + "\n")
    ring = Keyring.from_directory(tmp_path)
    assert ring.active.key_id == ids[1] and ring.active.version == 7
    assert Keyring.from_directory(tmp_path, active=ids[0]).active.version == 1


def test_the_only_key_is_active(tmp_path: Path, pems: list[str], ids: list[str]) -> None:
    put(tmp_path, "key-1.pem", pems[0])
    assert Keyring.from_directory(tmp_path).active.key_id == ids[0]
    assert Keyring.from_pem_text(pems[0]).active.key_id == ids[0]


@pytest.mark.parametrize("active", ["0123456789abcdef", "not hex at all"])
def test_an_unknown_active_key_fails(pems: list[str], ids: list[str], active: str) -> None:
    with pytest.raises(KeyringError, match="is not in the keyring") as caught:
        Keyring.from_pem_text("".join(pems), active=active)
    assert ids[0] in str(caught.value)


def test_an_unknown_active_file_fails(tmp_path: Path, pems: list[str]) -> None:
    put(tmp_path, "key-1.pem", pems[0])
    (tmp_path / ACTIVE_FILE).write_text("0123456789abcdef")
    with pytest.raises(KeyringError, match="'0123456789abcdef' is not in the keyring"):
        Keyring.from_directory(tmp_path)


def test_a_pasted_key_named_active_is_not_echoed(pems: list[str]) -> None:
    with pytest.raises(KeyringError) as caught:
        Keyring.from_pem_text(pems[0], active=pems[1])
    assert "(not a key id)" in str(caught.value)
    assert pems[1].splitlines()[1] not in str(caught.value)


def test_bad_keys_are_refused_without_echoing_them(
    tmp_path: Path, keys: list[rsa.RSAPrivateKey], pems: list[str]
) -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elliptic = ec.generate_private_key(ec.SECP256R1())
    encrypted = keys[0].private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pass"),
    )
    cases = {
        "2048 bits; at least 3072": _pem(small),
        "not an RSA key": _pem(elliptic),
        "is encrypted": encrypted,
        "not a PEM private key": pems[0].replace("M", "A").encode(),
    }
    for expected, pem in cases.items():
        with pytest.raises(KeyringError, match=expected) as caught:
            Keyring.from_pem_text(pem.decode())
        assert pem.decode().splitlines()[1] not in str(caught.value)
    with pytest.raises(KeyringError, match="no PEM private key"):
        Keyring.from_pem_text("")
    with pytest.raises(KeyringError, match="at least 3072 bits"):
        generate_private_key_pem(bits=2048)
    put(tmp_path, "key-1.pem", _pem(small).decode())
    with pytest.raises(KeyringError, match=r"key-1\.pem has 2048 bits"):
        Keyring.from_directory(tmp_path)


def test_directory_errors(tmp_path: Path, pems: list[str]) -> None:
    with pytest.raises(KeyringError, match="is not a directory"):
        Keyring.from_directory(tmp_path / "missing")
    with pytest.raises(KeyringError, match="holds no key"):
        Keyring.from_directory(tmp_path)
    put(tmp_path, "mine.pem", pems[0])
    with pytest.raises(
        KeyringError, match=r"mine\.pem: key files must be named key-<version>\.pem"
    ):
        Keyring.from_directory(tmp_path)


def test_the_same_key_twice_fails(pems: list[str]) -> None:
    with pytest.raises(KeyringError, match="twice"):
        Keyring.from_pem_text(pems[0] + pems[0])


def test_repr_shows_ids_not_keys(pems: list[str], ids: list[str]) -> None:
    ring = Keyring.from_pem_text("".join(pems), active=ids[0])
    shown = repr(ring) + repr(list(ring)) + str(ring.active)
    assert ids[0] in shown and ids[1] in shown
    assert "PRIVATE" not in shown and pems[0].splitlines()[1] not in shown
    assert str(ring.active.private_key.private_numbers().d)[:30] not in shown


def test_written_keys_are_private_and_count_up(tmp_path: Path) -> None:
    directory = tmp_path / "keys"
    first = write_new_key(directory, bits=3072)
    assert first.active and first.version == 1 and first.path == directory / "key-1.pem"
    assert mode(directory) == 0o700 and mode(first.path) == 0o600
    assert (directory / ACTIVE_FILE).read_text().strip() == first.key_id
    second = write_new_key(directory, bits=3072)
    assert not second.active and second.version == 2 and mode(second.path) == 0o600
    assert Keyring.from_directory(directory).active.key_id == first.key_id
    third = write_new_key(directory, bits=3072, activate=True)
    assert third.active and third.version == 3
    ring = Keyring.from_directory(directory)
    assert ring.active.key_id == third.key_id and len(ring) == 3
    assert sorted(p.name for p in directory.iterdir()) == [
        ACTIVE_FILE,
        "key-1.pem",
        "key-2.pem",
        "key-3.pem",
    ]


def test_adding_a_key_pins_an_only_key_that_active_did_not_name(
    tmp_path: Path, pems: list[str], ids: list[str]
) -> None:
    put(tmp_path, "key-1.pem", pems[0])
    write_new_key(tmp_path, bits=3072)
    assert Keyring.from_directory(tmp_path).active.key_id == ids[0]


def test_load_or_create_generates_the_embedded_key_once(tmp_path: Path) -> None:
    keys = tmp_path / "data" / "keys"
    ring = load_or_create(create_in=keys, bits=3072)
    assert len(ring) == 1 and ring.active.version == 1
    assert mode(keys) == 0o700 and mode(keys / "key-1.pem") == 0o600
    again = load_or_create(create_in=keys, bits=3072)
    assert again.active.key_id == ring.active.key_id and len(again) == 1


def test_load_or_create_prefers_configured_keys(
    tmp_path: Path, pems: list[str], ids: list[str]
) -> None:
    put(tmp_path / "configured", "key-1.pem", pems[0])
    created = tmp_path / "created"
    from_dir = load_or_create(keys_dir=tmp_path / "configured", create_in=created)
    from_text = load_or_create(keys_pem="".join(pems), active=ids[1], create_in=created)
    assert (from_dir.active.key_id, from_text.active.key_id) == (ids[0], ids[1])
    assert not created.exists()
    with pytest.raises(KeyringError, match="not both"):
        load_or_create(keys_dir=tmp_path / "configured", keys_pem=pems[0])


def test_load_or_create_in_production_names_the_settings() -> None:
    with pytest.raises(KeyringError) as caught:
        load_or_create()
    message = str(caught.value)
    for setting in ("BUDCLUSTER_KEYS_DIR", "BUDCLUSTER_KEYS_PEM", "BUDCLUSTER_ACTIVE_KEY"):
        assert setting in message


def _pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
