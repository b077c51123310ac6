"""Sealing secrets in envelopes (adapters/secrets/envelope.py).

Covers: a round trip; a flipped byte anywhere in the wrapped key, nonce or ciphertext, and a
changed key version, algorithm or format version, all fail; another owner fails; an envelope
from a key the keyring lacks fails; re-wrapping moves an envelope to the active key (the old key
can then be retired) and leaves a current one as it is; envelopes survive JSON; no repr or error
message shows key material or plaintext.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from adapters.secrets.envelope import EnvelopeSecretBox
from adapters.secrets.keyring import Keyring, generate_private_key_pem
from domain.errors import SecretUnreadable
from domain.model.secrets import Envelope
from domain.ports.secrets import SecretBox

KUBECONFIG = b"apiVersion: v1\nusers:\n- name: admin\n  user: {token: s3cr3t-t0ken}\n"


@pytest.fixture(scope="module")
def pems() -> list[str]:
    return [generate_private_key_pem(bits=3072).decode() for _ in range(2)]


@pytest.fixture(scope="module")
def old_ring(pems: list[str]) -> Keyring:
    return Keyring.from_pem_text(pems[0])


@pytest.fixture(scope="module")
def both_rings(pems: list[str]) -> tuple[Keyring, Keyring]:
    """The same two keys, first with the old one active, then with the new one."""
    text = pems[0] + pems[1]
    first = Keyring.from_pem_text(text, active=Keyring.from_pem_text(pems[0]).active.key_id)
    second = Keyring.from_pem_text(text, active=Keyring.from_pem_text(pems[1]).active.key_id)
    return first, second


@pytest.fixture
def box(old_ring: Keyring) -> EnvelopeSecretBox:
    return EnvelopeSecretBox(old_ring)


def owner() -> str:
    return str(uuid.uuid4())


def test_round_trip(box: EnvelopeSecretBox) -> None:
    cluster = owner()
    envelope = box.seal(KUBECONFIG, owner=cluster)
    assert (envelope.key_id, envelope.key_version) == (box.active_key_id, 1)
    assert len(envelope.nonce) == 12 and len(envelope.ciphertext) == len(KUBECONFIG) + 16
    assert KUBECONFIG not in envelope.ciphertext
    assert box.open(envelope, owner=cluster) == KUBECONFIG
    assert box.open(box.seal(b"", owner=cluster), owner=cluster) == b""


def test_each_seal_draws_a_fresh_data_key_and_nonce(box: EnvelopeSecretBox) -> None:
    cluster = owner()
    a, b = box.seal(KUBECONFIG, owner=cluster), box.seal(KUBECONFIG, owner=cluster)
    assert a.wrapped_key != b.wrapped_key and a.nonce != b.nonce and a.ciphertext != b.ciphertext


@pytest.mark.parametrize("part", ["wrapped_key", "nonce", "ciphertext"])
@pytest.mark.parametrize("where", [0, 5, -1])
def test_a_flipped_byte_anywhere_fails(box: EnvelopeSecretBox, part: str, where: int) -> None:
    cluster = owner()
    envelope = box.seal(KUBECONFIG, owner=cluster)
    data = bytearray(getattr(envelope, part))
    data[where] ^= 0x01
    changes: dict[str, Any] = {part: bytes(data)}
    with pytest.raises(SecretUnreadable) as caught:
        box.open(dataclasses.replace(envelope, **changes), owner=cluster)
    assert caught.value.code == "SECRET_UNREADABLE"
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


@pytest.mark.parametrize(
    "changes",
    [
        {"key_version": 2},
        {"algorithm": "RSA-OAEP+A128GCM"},
        {"version": 2},
        {"nonce": b"\0" * 16},
        {"ciphertext": b""},
        {"wrapped_key": b""},
    ],
)
def test_a_changed_field_fails(box: EnvelopeSecretBox, changes: dict[str, Any]) -> None:
    cluster = owner()
    envelope = box.seal(KUBECONFIG, owner=cluster)
    with pytest.raises(SecretUnreadable):
        box.open(dataclasses.replace(envelope, **changes), owner=cluster)


def test_another_owner_fails(box: EnvelopeSecretBox) -> None:
    envelope = box.seal(KUBECONFIG, owner=owner())
    with pytest.raises(SecretUnreadable, match="another owner"):
        box.open(envelope, owner=owner())


def test_a_key_the_keyring_lacks_fails(box: EnvelopeSecretBox, pems: list[str]) -> None:
    cluster = owner()
    foreign = EnvelopeSecretBox(Keyring.from_pem_text(pems[1])).seal(KUBECONFIG, owner=cluster)
    with pytest.raises(SecretUnreadable, match="does not hold"):
        box.open(foreign, owner=cluster)
    with pytest.raises(SecretUnreadable, match="does not hold"):
        box.rewrap(foreign)


def test_a_key_id_pointing_at_another_held_key_fails(
    both_rings: tuple[Keyring, Keyring],
) -> None:
    first, second = both_rings
    cluster = owner()
    envelope = EnvelopeSecretBox(first).seal(KUBECONFIG, owner=cluster)
    moved = dataclasses.replace(envelope, key_id=second.active.key_id, key_version=2)
    with pytest.raises(SecretUnreadable):
        EnvelopeSecretBox(second).open(moved, owner=cluster)


def test_rewrap_moves_to_the_active_key_and_the_old_key_can_retire(
    both_rings: tuple[Keyring, Keyring], pems: list[str]
) -> None:
    first, second = both_rings
    cluster = owner()
    envelope = EnvelopeSecretBox(first).seal(KUBECONFIG, owner=cluster)
    rewrapped = EnvelopeSecretBox(second).rewrap(envelope)
    assert (rewrapped.key_id, rewrapped.key_version) == (second.active.key_id, 2)
    assert (rewrapped.nonce, rewrapped.ciphertext) == (envelope.nonce, envelope.ciphertext)
    assert rewrapped.wrapped_key != envelope.wrapped_key
    only_new = Keyring.from_pem_text(pems[1])
    assert only_new.active.key_id == second.active.key_id
    assert EnvelopeSecretBox(only_new).open(rewrapped, owner=cluster) == KUBECONFIG
    with pytest.raises(SecretUnreadable):
        EnvelopeSecretBox(only_new).open(rewrapped, owner=owner())


def test_rewrap_of_a_current_envelope_returns_it(both_rings: tuple[Keyring, Keyring]) -> None:
    _, second = both_rings
    box = EnvelopeSecretBox(second)
    envelope = box.seal(KUBECONFIG, owner=owner())
    assert box.rewrap(envelope) is envelope


def test_json_round_trip(box: EnvelopeSecretBox) -> None:
    cluster = owner()
    envelope = box.seal(KUBECONFIG, owner=cluster)
    text = envelope.to_json()
    assert Envelope.from_json(text) == envelope
    assert box.open(Envelope.from_json(text), owner=cluster) == KUBECONFIG


def test_nothing_secret_in_reprs_or_messages(
    box: EnvelopeSecretBox, old_ring: Keyring, pems: list[str]
) -> None:
    cluster = owner()
    envelope = box.seal(KUBECONFIG, owner=cluster)
    private = old_ring.active.private_key
    numbers = private.private_numbers()
    der = private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(SecretUnreadable) as caught:
        box.open(envelope, owner=owner())
    shown = " ".join([repr(box), str(box), repr(old_ring), repr(old_ring.active), repr(envelope)])
    shown += " " + str(caught.value) + " " + repr(caught.value)
    pem_body = "".join(pems[0].splitlines()[1:-1])
    forbidden = [
        pem_body[:40],
        pem_body[-40:],
        der.hex()[:64],
        str(numbers.d)[:40],
        str(numbers.p)[:40],
        "s3cr3t",
        envelope.wrapped_key.hex()[:32],
        envelope.ciphertext.hex()[:32],
        base64.b64encode(envelope.wrapped_key).decode()[:32],
    ]
    for fragment in forbidden:
        assert fragment not in shown
    assert old_ring.active.key_id in repr(box)


def test_satisfies_the_port(box: EnvelopeSecretBox) -> None:
    port: SecretBox = box
    assert port.active_key_id == box.active_key_id
