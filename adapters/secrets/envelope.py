"""Envelope encryption (domain/model/secrets.py) on a keyring: the SecretBox adapter.

Sealing draws a fresh 32-byte data key and a 12-byte nonce, encrypts with AES-256-GCM, and wraps
the data key with the active key by RSA-OAEP (MGF1 SHA-256, SHA-256). Everything an envelope
states is authenticated, in two places, so that rotation can re-wrap the data key without
touching the ciphertext (the SecretBox contract): the GCM associated data binds the owner, the
algorithm and the format version; the OAEP label binds the key id, the key version, the algorithm
and the format version to the wrapped key. The key id and version cannot go into the GCM data, as
re-wrapping changes them; the owner cannot go into the label, as re-wrapping does not know it.
Either way, an envelope opened for another owner, or with any stated field changed, fails. Both
are canonical encodings: a purpose tag, then each field as UTF-8 behind its 4-byte length.

Opening finds the key by the envelope's key id alone and checks the version the envelope states
(through the label), so a keyring that renumbers its keys still opens what it sealed before.
Every failure is SecretUnreadable, its message naming at most the key id: no plaintext, data key
or private key ever reaches a message, a repr or a log.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adapters.secrets.keyring import Keyring, KeyringError, RingKey
from domain.errors import SecretsUnavailable, SecretUnreadable
from domain.model.secrets import ALGORITHM, FORMAT_VERSION, Envelope

log = logging.getLogger(__name__)

DATA_KEY_BYTES = 32
NONCE_BYTES = 12
_ALTERED = "the sealed secret could not be opened: it was altered"


class EnvelopeSecretBox:
    def __init__(self, keyring: Keyring) -> None:
        self._keyring = keyring

    @property
    def active_key_id(self) -> str:
        return self._keyring.active.key_id

    def seal(self, plaintext: bytes, *, owner: str) -> Envelope:
        key = self._keyring.active
        data_key = AESGCM.generate_key(bit_length=DATA_KEY_BYTES * 8)
        nonce = os.urandom(NONCE_BYTES)
        return Envelope(
            key_id=key.key_id,
            key_version=key.version,
            wrapped_key=_wrap(data_key, key),
            nonce=nonce,
            ciphertext=AESGCM(data_key).encrypt(nonce, plaintext, _associated_data(owner)),
        )

    def open(self, envelope: Envelope, *, owner: str) -> bytes:
        data_key = self._unwrap(envelope)
        try:
            return AESGCM(data_key).decrypt(
                envelope.nonce, envelope.ciphertext, _associated_data(owner)
            )
        except (InvalidTag, ValueError, TypeError):
            raise SecretUnreadable(
                "the sealed secret could not be opened: it was altered or sealed for another owner"
            ) from None

    def rewrap(self, envelope: Envelope) -> Envelope:
        active = self._keyring.active
        if envelope.key_id == active.key_id:
            return envelope
        return dataclasses.replace(
            envelope,
            key_id=active.key_id,
            key_version=active.version,
            wrapped_key=_wrap(self._unwrap(envelope), active),
        )

    def _unwrap(self, envelope: Envelope) -> bytes:
        if envelope.algorithm != ALGORITHM or envelope.version != FORMAT_VERSION:
            raise SecretUnreadable("the sealed secret has an unknown algorithm or format")
        key = self._keyring.get(envelope.key_id)
        if key is None:
            raise SecretUnreadable(
                f"the sealed secret was wrapped with key {envelope.key_id[:64]!r}, "
                "which the keyring does not hold"
            )
        try:
            data_key = key.private_key.decrypt(
                envelope.wrapped_key, _oaep(envelope.key_id, envelope.key_version)
            )
        except (ValueError, TypeError):
            raise SecretUnreadable(_ALTERED) from None
        if len(data_key) != DATA_KEY_BYTES or len(envelope.nonce) != NONCE_BYTES:
            raise SecretUnreadable(_ALTERED)
        return data_key

    def __repr__(self) -> str:
        return f"EnvelopeSecretBox({self._keyring!r})"


def _wrap(data_key: bytes, key: RingKey) -> bytes:
    return key.public_key.encrypt(data_key, _oaep(key.key_id, key.version))


def _oaep(key_id: str, key_version: int) -> padding.OAEP:
    return padding.OAEP(
        mgf=padding.MGF1(algorithm=hashes.SHA256()),
        algorithm=hashes.SHA256(),
        label=_canonical("budcluster/envelope/wrap", key_id, str(key_version)),
    )


def _associated_data(owner: str) -> bytes:
    return _canonical("budcluster/envelope/data", owner)


def _canonical(purpose: str, *fields: str) -> bytes:
    parts = (purpose, ALGORITHM, str(FORMAT_VERSION), *fields)
    encoded = (part.encode() for part in parts)
    return b"".join(len(part).to_bytes(4, "big") + part for part in encoded)


class LazySecretBox:
    """Loads the keyring at first use, so a process that never touches a secret needs no keys,
    and a missing configuration is reported where it matters: SecretsUnavailable.

    With `stamp` (keyring.directory_stamp of the keys directory), the keyring is loaded again
    whenever the stamp changes: a key generated and activated while the service runs is used
    for the next seal, and secrets re-wrapped to it by `budcluster keys rotate` open at once.
    """

    def __init__(
        self, load: Callable[[], Keyring], *, stamp: Callable[[], object] | None = None
    ) -> None:
        self._load = load
        self._stamp = stamp
        self._loaded_at: object = None
        self._box: EnvelopeSecretBox | None = None

    def _ready(self) -> EnvelopeSecretBox:
        current = self._stamp() if self._stamp is not None else None
        if self._box is None or current != self._loaded_at:
            try:
                self._box = EnvelopeSecretBox(self._load())
            except KeyringError as exc:
                if self._box is None:
                    raise SecretsUnavailable(str(exc)) from None
                # a keys directory caught mid-change, or broken: keep the keys that worked
                log.warning("reloading the keyring failed, keeping the loaded keys: %s", exc)
                return self._box
            # the stamp after loading: a first key generated by the load counts as seen
            self._loaded_at = self._stamp() if self._stamp is not None else None
        return self._box

    @property
    def active_key_id(self) -> str:
        return self._ready().active_key_id

    def seal(self, plaintext: bytes, *, owner: str) -> Envelope:
        return self._ready().seal(plaintext, owner=owner)

    def open(self, envelope: Envelope, *, owner: str) -> bytes:
        return self._ready().open(envelope, owner=owner)

    def rewrap(self, envelope: Envelope) -> Envelope:
        return self._ready().rewrap(envelope)

    def __repr__(self) -> str:
        return f"LazySecretBox(loaded={self._box is not None})"
