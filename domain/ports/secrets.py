"""Envelope encryption of kubeconfigs and credentials, and hashing of token secrets."""

from __future__ import annotations

from typing import Protocol

from domain.model.secrets import Envelope


class SecretBox(Protocol):
    """Envelope encryption (domain/model/secrets.py) with a keyring of RSA keys, one active."""

    def seal(self, plaintext: bytes, *, owner: str) -> Envelope:
        """Encrypt under a fresh data key wrapped with the active key, bound to `owner`."""

    def open(self, envelope: Envelope, *, owner: str) -> bytes:
        """Raises SecretUnreadable when tampered with, sealed for another owner, or wrapped
        with a key the keyring lacks."""

    def rewrap(self, envelope: Envelope) -> Envelope:
        """The same data key wrapped with the active key (the ciphertext is unchanged); the
        envelope itself when the active key already wraps it. Raises SecretUnreadable."""

    @property
    def active_key_id(self) -> str: ...


class SecretHasher(Protocol):
    def hash(self, secret: str) -> str: ...

    def verify(self, secret: str, hashed: str) -> bool: ...
