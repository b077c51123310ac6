"""The keyring: RSA private keys that wrap data keys, each named by a key id, one of them active.

A key's id is derived from the key itself (the first 16 hex digits of the SHA-256 of its DER
public key), so it cannot drift from the key; its version is a number the keyring gives it, higher
for newer keys, which envelopes record. Keys come from one of two places. A directory holds one
unencrypted PEM private key per file named `key-<version>.pem` (mode 0600, directory 0700) and,
optionally, a file `ACTIVE` holding the active key's id. Or a text (BUDCLUSTER_KEYS_PEM) holds
one or more concatenated PEM private keys, versions 1, 2, ... in their order (`\\n` escapes are
accepted for environments that cannot hold newlines). The active key is the one named by the
`active` argument (BUDCLUSTER_ACTIVE_KEY), else by `ACTIVE`, else the only key: several keys and
none named is an error, not a guess. Non-RSA keys and keys under 3072 bits are refused. Nothing
here logs or formats key material; errors name files, PEM block numbers and key ids only.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

MIN_BITS = 3072
DEFAULT_BITS = 4096
ACTIVE_FILE = "ACTIVE"

_KEY_FILE = re.compile(r"key-([1-9][0-9]*)\.pem")
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.DOTALL)
_KEY_ID = re.compile(r"[0-9a-f]{1,64}")

log = logging.getLogger(__name__)

_validated: set[bytes] = set()
"""Digests of the PEM keys this process has checked (an RSA check is slow; one is enough)."""


class KeyringError(ValueError):
    """The keys are missing, malformed, too weak, or the active one is unknown or ambiguous."""


@dataclass(frozen=True)
class RingKey:
    key_id: str
    version: int
    private_key: rsa.RSAPrivateKey = field(repr=False, compare=False)

    @property
    def public_key(self) -> rsa.RSAPublicKey:
        return self.private_key.public_key()


@dataclass(frozen=True)
class KeyFile:
    """A key written by `write_new_key`."""

    path: Path
    key_id: str
    version: int
    active: bool
    """Named in ACTIVE: asked for, or the directory's first key."""


class Keyring:
    def __init__(self, keys: Iterable[RingKey], *, active: str | None = None) -> None:
        by_id: dict[str, RingKey] = {}
        for key in keys:
            if key.key_id in by_id:
                raise KeyringError(f"key {key.key_id} is in the keyring twice")
            if any(other.version == key.version for other in by_id.values()):
                raise KeyringError(f"two keys have version {key.version}")
            by_id[key.key_id] = key
        if not by_id:
            raise KeyringError("the keyring holds no keys")
        if active is None:
            if len(by_id) > 1:
                raise KeyringError(
                    f"the keyring holds {len(by_id)} keys and none is named active: set "
                    "BUDCLUSTER_ACTIVE_KEY or write the key id into the keys directory's ACTIVE"
                )
            active = next(iter(by_id))
        if active not in by_id:
            raise KeyringError(
                f"the active key {_shown(active)} is not in the keyring "
                f"(it holds {', '.join(sorted(by_id))})"
            )
        self._keys = by_id
        self._active = by_id[active]

    @classmethod
    def from_directory(cls, path: Path, *, active: str | None = None) -> Keyring:
        """Every `key-<version>.pem` in `path`; `active` overrides the ACTIVE file."""
        if not path.is_dir():
            raise KeyringError(f"{path} is not a directory of keys")
        keys = []
        for file in sorted(path.glob("*.pem")):
            match = _KEY_FILE.fullmatch(file.name)
            if match is None:
                raise KeyringError(f"{file}: key files must be named key-<version>.pem")
            if file.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                log.warning("%s is accessible to other users; chmod 600 it", file)
            keys.append(_ring_key(_read(file), version=int(match[1]), source=str(file)))
        if not keys:
            raise KeyringError(f"{path} holds no key-<version>.pem files")
        return cls(keys, active=active if active is not None else _read_active(path))

    @classmethod
    def from_pem_text(cls, text: str, *, active: str | None = None) -> Keyring:
        """One or more concatenated PEM private keys, versions 1, 2, ... in order."""
        blocks = [m[0] for m in _PEM_BLOCK.finditer(text.replace("\\n", "\n"))]
        if not blocks:
            raise KeyringError("no PEM private key found in the keys text")
        return cls(
            (
                _ring_key(block.encode(), version=n, source=f"PEM block {n} of the keys text")
                for n, block in enumerate(blocks, start=1)
            ),
            active=active,
        )

    @property
    def active(self) -> RingKey:
        return self._active

    def get(self, key_id: str) -> RingKey | None:
        return self._keys.get(key_id)

    def __iter__(self) -> Iterator[RingKey]:
        return iter(sorted(self._keys.values(), key=lambda k: k.version))

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        held = ", ".join(f"{k.key_id} v{k.version}" for k in self)
        return f"Keyring(active={self._active.key_id!r}, keys=[{held}])"


def key_id_of(public_key: rsa.RSAPublicKey) -> str:
    der = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


def generate_private_key_pem(*, bits: int = DEFAULT_BITS) -> bytes:
    """A new RSA private key as unencrypted PKCS#8 PEM."""
    return _generate(bits)[1]


def write_new_key(directory: Path, *, bits: int = DEFAULT_BITS, activate: bool = False) -> KeyFile:
    """A new key in `directory` (made, 0700, if missing) as `key-<next version>.pem`, 0600.

    With `activate`, or as the directory's first key, it is named in ACTIVE. Otherwise the active
    key stays what it was: an only key that ACTIVE did not name yet is named there first.
    """
    key_id, pem = _generate(bits)
    _make_private_directory(directory)
    if not activate and _versions(directory) and not (directory / ACTIVE_FILE).exists():
        with contextlib.suppress(KeyringError):  # none was active before either
            _write_active(directory, Keyring.from_directory(directory).active.key_id)
    while True:
        earlier = _versions(directory)
        version = max(earlier, default=0) + 1
        path = directory / f"key-{version}.pem"
        if _create_private_file(path, pem):
            break
    active = activate or not earlier
    if active:
        _write_active(directory, key_id)
    return KeyFile(path=path, key_id=key_id, version=version, active=active)


def retire_key(directory: Path, key_id: str, *, check_only: bool = False) -> Path:
    """Delete the key file holding `key_id` (with `check_only`, only say which it would be); the
    active key can't be retired. The caller checks first that no stored secret is wrapped with
    it (`budcluster keys retire`)."""
    ring = Keyring.from_directory(directory)
    key = ring.get(key_id)
    if key is None:
        raise KeyringError(f"{directory} holds no key {_shown(key_id)}")
    if key.key_id == ring.active.key_id:
        raise KeyringError(f"key {key_id} is the active key: activate another one first")
    path = directory / f"key-{key.version}.pem"
    if not check_only:
        path.unlink()
    return path


def directory_stamp(directory: Path | None) -> object:
    """Changes whenever a key file or ACTIVE in `directory` is added, removed or rewritten:
    a running service reloads its keyring when it does (rotation while it runs)."""
    if directory is None or not directory.is_dir():
        return None
    entries = []
    for file in directory.iterdir():
        if file.name == ACTIVE_FILE or _KEY_FILE.fullmatch(file.name):
            with contextlib.suppress(OSError):
                info = file.stat()
                entries.append((file.name, info.st_mtime_ns, info.st_size, info.st_ino))
    return tuple(sorted(entries))


def load_or_create(
    *,
    keys_dir: Path | None = None,
    keys_pem: str | None = None,
    active: str | None = None,
    create_in: Path | None = None,
    bits: int = DEFAULT_BITS,
) -> Keyring:
    """The keyring as configured: from `keys_pem` (BUDCLUSTER_KEYS_PEM) or `keys_dir`
    (BUDCLUSTER_KEYS_DIR), not both, with `active` (BUDCLUSTER_ACTIVE_KEY) naming the active key.

    With neither, the keys in `create_in` (the embedded run's `<data dir>/keys`), where a first
    key is generated if there is none; without `create_in` (production) it is an error that
    names the settings to set.
    """
    if keys_pem and keys_dir is not None:
        raise KeyringError("set BUDCLUSTER_KEYS_DIR or BUDCLUSTER_KEYS_PEM, not both")
    if keys_pem:
        return Keyring.from_pem_text(keys_pem, active=active)
    if keys_dir is not None:
        return Keyring.from_directory(keys_dir, active=active)
    if create_in is None:
        raise KeyringError(
            "no keys to seal secrets with: set BUDCLUSTER_KEYS_DIR (a directory of PEM private "
            "keys; `budcluster keys generate --dir DIR` makes one) or BUDCLUSTER_KEYS_PEM, and "
            "BUDCLUSTER_ACTIVE_KEY when there are several keys"
        )
    if not _versions(create_in):
        key_id, pem = _generate(bits)
        _make_private_directory(create_in)
        if _create_private_file(create_in / "key-1.pem", pem):
            _write_active(create_in, key_id)
            log.info("generated key %s for sealing secrets in %s", key_id, create_in)
        # else another process made the first key a moment ago: use that one
    return Keyring.from_directory(create_in, active=active)


def _generate(bits: int) -> tuple[str, bytes]:
    """A new key's id and PEM."""
    if bits < MIN_BITS:
        raise KeyringError(f"RSA keys need at least {MIN_BITS} bits")
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _validated.add(hashlib.sha256(pem).digest())  # made here, so sound
    return key_id_of(key.public_key()), pem


def _ring_key(pem: bytes, *, version: int, source: str) -> RingKey:
    digest = hashlib.sha256(pem).digest()
    try:
        key = serialization.load_pem_private_key(
            pem, password=None, unsafe_skip_rsa_key_validation=digest in _validated
        )
    except TypeError:
        raise KeyringError(f"{source} is encrypted; keys must be unencrypted PEM") from None
    except (ValueError, UnsupportedAlgorithm):
        raise KeyringError(f"{source} is not a PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyringError(f"{source} is not an RSA key")
    if key.key_size < MIN_BITS:
        raise KeyringError(f"{source} has {key.key_size} bits; at least {MIN_BITS} are needed")
    _validated.add(digest)
    return RingKey(key_id=key_id_of(key.public_key()), version=version, private_key=key)


def _shown(key_id: str) -> str:
    """A configured key id, fit for a message: anything else (a pasted key?) is not echoed."""
    return repr(key_id) if _KEY_ID.fullmatch(key_id) else "(not a key id)"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KeyringError(f"{path}: {exc.strerror}") from None


def _read_active(directory: Path) -> str | None:
    path = directory / ACTIVE_FILE
    if not path.exists():
        return None
    return _read(path).decode("ascii", errors="replace").strip() or None


def _versions(directory: Path) -> set[int]:
    if not directory.is_dir():
        return set()
    return {
        int(match[1])
        for file in directory.glob("key-*.pem")
        if (match := _KEY_FILE.fullmatch(file.name))
    }


def _make_private_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        return
    os.chmod(directory, 0o700)  # mkdir's mode is narrowed by the umask, never widened


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _create_private_file(path: Path, data: bytes) -> bool:
    """Write `path` whole or not at all; False if it exists (another writer was first)."""
    staged = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        _write_private(staged, data)
        os.link(staged, path)
    except FileExistsError:
        return False
    finally:
        staged.unlink(missing_ok=True)
    return True


def _write_active(directory: Path, key_id: str) -> None:
    staged = directory / f".{ACTIVE_FILE}.{secrets.token_hex(4)}.tmp"
    try:
        _write_private(staged, f"{key_id}\n".encode())
        os.replace(staged, directory / ACTIVE_FILE)
    finally:
        staged.unlink(missing_ok=True)
