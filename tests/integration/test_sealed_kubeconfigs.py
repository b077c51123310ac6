"""Sealed kubeconfigs in the database (SQLite and PostgreSQL), with the real keyring.

Covers: what registration stores is an envelope that opens only for its own cluster, and a
flipped byte in any part of it does not open; saving a cluster from a stale read never writes its
configuration back (so it can't undo a re-wrap), and swapping the configuration is a
compare-and-set; rotation re-wraps every stored kubeconfig to the newly active key without
touching the ciphertext, a second rotation finds nothing to do, the old key can then be retired
(a keyring without it opens everything), and a kubeconfig that no key opens is reported by
cluster name, never by content.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.secrets.envelope import EnvelopeSecretBox, LazySecretBox
from adapters.secrets.keyring import Keyring, directory_stamp, load_or_create, write_new_key
from budcluster.bootstrap import App
from domain.errors import SecretUnreadable
from domain.model.cluster import Platform
from domain.model.ids import ClusterId
from domain.model.secrets import Envelope
from domain.ports.unit_of_work import TenantScope
from domain.services.registry import Registration
from tests.integration.test_app_flows import make_app
from tests.support.fakes import make_cluster
from tests.support.kube_emulator import kubeconfig_for

SYSTEM = TenantScope.system()
BITS = 3072


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    directory = tmp_path / "keys"
    write_new_key(directory, bits=BITS)
    return directory


@pytest.fixture
async def app(db: Database, keys: Path) -> App:
    return await make_app(db.url, keys_dir=keys, kube_plain_http=True)  # the emulator's HTTP


def kubeconfig(n: int) -> str:
    return kubeconfig_for(f"https://10.0.0.{n}:6443", token=f"token-{n}-{uuid.uuid4().hex}")


async def stored(app: App, cluster_id: ClusterId) -> Envelope:
    async with app.db.unit_of_work(SYSTEM) as uow:
        cluster = await uow.clusters.get(cluster_id)
    assert cluster is not None and cluster.configuration is not None
    return cluster.configuration


async def test_a_stored_kubeconfig_opens_for_its_cluster_only(app: App, keys: Path) -> None:
    text = kubeconfig(1)
    cluster = await app.registry.register(
        Registration(name="lab", platform=Platform.ON_PREM, kubeconfig=text)
    )
    sealed = await stored(app, cluster.id)
    box = EnvelopeSecretBox(Keyring.from_directory(keys))
    assert box.open(sealed, owner=str(cluster.id)).decode() == text
    assert text.encode() not in sealed.to_json().encode()
    with pytest.raises(SecretUnreadable):
        box.open(sealed, owner=str(uuid.uuid4()))  # another cluster's id
    for part in ("wrapped_key", "nonce", "ciphertext"):
        raw = bytearray(getattr(sealed, part))
        raw[len(raw) // 2] ^= 0x01
        tampered: dict[str, Any] = {part: bytes(raw)}
        with pytest.raises(SecretUnreadable):
            box.open(dataclasses.replace(sealed, **tampered), owner=str(cluster.id))
    await app.close()


async def test_save_never_writes_the_configuration_and_swap_compares(db: Database) -> None:
    cluster_id = ClusterId(uuid.uuid4())
    first = Envelope("k1", 1, b"w" * 384, b"n" * 12, b"first")
    second = dataclasses.replace(first, key_id="k2", key_version=2)
    cluster = dataclasses.replace(make_cluster(cluster_id, name="real"), configuration=first)
    async with db.unit_of_work(SYSTEM) as uow:
        await uow.clusters.add(cluster)
        await uow.commit()
    stale = dataclasses.replace(cluster, configuration=None, reason="a sync's write")
    async with db.unit_of_work(SYSTEM) as uow:
        assert await uow.clusters.swap_configuration(cluster_id, first, second)
        await uow.clusters.save(stale)  # read before the swap: must not undo it
        assert not await uow.clusters.swap_configuration(cluster_id, first, first)
        assert not await uow.clusters.swap_configuration(ClusterId(uuid.uuid4()), None, first)
        await uow.commit()
    async with db.unit_of_work(SYSTEM) as uow:
        again = await uow.clusters.get(cluster_id)
    assert again is not None and again.configuration == second and again.reason == "a sync's write"


async def test_rotation_rewraps_everything_and_the_old_key_retires(app: App, keys: Path) -> None:
    texts = [kubeconfig(n) for n in range(3)]
    clusters = [
        await app.registry.register(
            Registration(name=f"lab-{n}", platform=Platform.ON_PREM, kubeconfig=text)
        )
        for n, text in enumerate(texts)
    ]
    old = Keyring.from_directory(keys).active.key_id
    before = [await stored(app, c.id) for c in clusters]
    new = write_new_key(keys, bits=BITS, activate=True)

    rotation = await app.registry.rewrap_secrets()  # the running app sees the new key
    assert (rotation.active_key_id, rotation.rewrapped, rotation.current) == (new.key_id, 3, 0)
    after = [await stored(app, c.id) for c in clusters]
    for was, now in zip(before, after, strict=True):
        assert (was.key_id, now.key_id, now.key_version) == (old, new.key_id, 2)
        assert now.ciphertext == was.ciphertext and now.wrapped_key != was.wrapped_key
    again = await app.registry.rewrap_secrets()
    assert (again.rewrapped, again.current, again.failed) == (0, 3, [])
    assert await app.registry.key_in_use(old) == []

    (keys / "key-1.pem").unlink()  # retired
    box = EnvelopeSecretBox(Keyring.from_directory(keys))
    for cluster, text, sealed in zip(clusters, texts, after, strict=True):
        assert box.open(sealed, owner=str(cluster.id)).decode() == text
    await app.close()


async def test_a_kubeconfig_no_key_opens_is_named_by_cluster(
    app: App, keys: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = kubeconfig(7)
    cluster = await app.registry.register(
        Registration(name="orphaned", platform=Platform.ON_PREM, kubeconfig=text)
    )
    sealed = await stored(app, cluster.id)
    foreign = dataclasses.replace(sealed, key_id="0123456789abcdef")
    async with app.db.unit_of_work(SYSTEM) as uow:
        assert await uow.clusters.swap_configuration(cluster.id, sealed, foreign)
        await uow.commit()
    write_new_key(keys, bits=BITS, activate=True)
    rotation = await app.registry.rewrap_secrets()
    assert rotation.failed == ["orphaned"] and rotation.rewrapped == 0
    token = text.split("token: ")[1].split()[0]
    for record in caplog.records:
        message = record.getMessage()
        assert token not in message and base64.b64encode(text.encode())[:20].decode() not in message
    assert any("orphaned" in r.getMessage() for r in caplog.records)
    await app.close()


def test_a_running_service_reloads_a_changed_keys_directory(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    box = LazySecretBox(
        lambda: load_or_create(keys_dir=None, create_in=keys, bits=BITS),
        stamp=lambda: directory_stamp(keys),
    )
    first = box.seal(b"kubeconfig", owner="c1")
    new = write_new_key(keys, bits=BITS, activate=True)
    second = box.seal(b"kubeconfig", owner="c1")
    assert second.key_id == new.key_id != first.key_id
    assert box.open(first, owner="c1") == box.open(second, owner="c1") == b"kubeconfig"
    (keys / "ACTIVE").write_text("not-a-key\n")  # broken mid-change: the loaded keys stay
    assert box.open(second, owner="c1") == b"kubeconfig"
