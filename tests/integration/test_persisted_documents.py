"""Persisted documents over HTTP, in-process: the manifest GraphQL Code Generator made from
frontend-contract/operations, looked up by sha256.

Covers: with the default (`off`) a free-text query runs, a known hash runs its stored document
with no `query` at all (as `extensions.persistedQuery.sha256Hash` or `documentId`), an unknown
hash falls back to the request's text and without one is PERSISTED_DOCUMENT_NOT_FOUND; with
`only`, free text (POST or GET) is PERSISTED_DOCUMENT_REQUIRED, the stored text itself or its hash
runs, an unknown hash is refused, a malformed one is BAD_REQUEST; a manifest whose key is not its
document's sha256 is refused when it is loaded, and a deployment's own manifest replaces the
contract's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from budcluster.http.persisted import MANIFEST, InvalidManifest, PersistedDocuments
from tests.integration.test_graphql_api import Api
from tests.integration.test_request_limits import assert_json_error, serving

DOCUMENTS: dict[str, str] = json.loads(MANIFEST.read_text())
CLUSTER_LIST = next(h for h, text in DOCUMENTS.items() if "query ClusterList " in text)


def persisted(digest: str) -> dict[str, object]:
    return {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": digest}}}


@pytest.fixture
async def open_api(sqlite_url: str) -> AsyncIterator[Api]:
    async with serving(sqlite_url) as made:
        yield made


@pytest.fixture
async def only_api(sqlite_url: str) -> AsyncIterator[Api]:
    async with serving(sqlite_url, persisted_documents="only") as made:
        yield made


async def post(api: Api, body: dict[str, object], token: str) -> dict[str, object]:
    response = await api.client.post(
        "/graphql", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()
    assert "errors" not in answer, answer
    return answer


async def test_by_default_free_text_and_known_hashes_both_run(open_api: Api) -> None:
    token = await open_api.token()
    free = await post(open_api, {"query": "{ clusters { id } }"}, token)
    assert free["data"] == {"clusters": [{"id": open_api.cluster_id}]}
    by_hash = await post(open_api, persisted(CLUSTER_LIST), token)
    clusters = by_hash["data"]["clusters"]  # type: ignore[index]
    assert [c["id"] for c in clusters] == [open_api.cluster_id]
    assert {"capacity", "status", "platform"} <= set(clusters[0])  # the stored selection ran
    by_id = await post(open_api, {"documentId": f"sha256:{CLUSTER_LIST}"}, token)
    assert by_id == by_hash


async def test_by_default_an_unknown_hash_falls_back_to_the_text(open_api: Api) -> None:
    token = await open_api.token()
    unknown = "0" * 64
    answer = await post(open_api, {"query": "{ clusters { id } }", **persisted(unknown)}, token)
    assert answer["data"] == {"clusters": [{"id": open_api.cluster_id}]}
    response = await open_api.client.post(
        "/graphql", json=persisted(unknown), headers={"Authorization": f"Bearer {token}"}
    )
    assert_json_error(response, 400, "PERSISTED_DOCUMENT_NOT_FOUND")


async def test_only_mode_runs_stored_documents_alone(only_api: Api) -> None:
    token = await only_api.token()
    headers = {"Authorization": f"Bearer {token}"}
    free = await only_api.client.post(
        "/graphql", json={"query": "{ clusters { id } }"}, headers=headers
    )
    assert_json_error(free, 400, "PERSISTED_DOCUMENT_REQUIRED")
    by_get = await only_api.client.get(
        "/graphql", params={"query": "{ clusters { id } }"}, headers=headers
    )
    assert_json_error(by_get, 400, "PERSISTED_DOCUMENT_REQUIRED")
    # The hash names the document; text sent beside it is not what runs.
    answer = await post(only_api, {"query": "{ __typename }", **persisted(CLUSTER_LIST)}, token)
    assert [c["id"] for c in answer["data"]["clusters"]] == [only_api.cluster_id]  # type: ignore[index]
    assert await post(only_api, {"query": DOCUMENTS[CLUSTER_LIST]}, token) == answer
    unknown = await only_api.client.post("/graphql", json=persisted("a" * 64), headers=headers)
    assert_json_error(unknown, 400, "PERSISTED_DOCUMENT_NOT_FOUND")
    for malformed in (
        persisted("xyz"),
        persisted("A" * 64),
        {"extensions": {"persistedQuery": "abc"}},
        {"extensions": {"persistedQuery": {"version": 1}}},
        {"documentId": 5},
        {"documentId": "md5:" + "a" * 32},
    ):
        refused = await only_api.client.post("/graphql", json=malformed, headers=headers)
        assert_json_error(refused, 400, "BAD_REQUEST")
    mutation = await only_api.client.post(
        "/graphql",
        json={
            "query": 'mutation { cancelJob(id: "00000000-0000-0000-0000-000000000000") '
            "{ __typename } }"
        },
        headers=headers,
    )
    assert_json_error(mutation, 400, "PERSISTED_DOCUMENT_REQUIRED")


def test_every_manifest_key_is_its_documents_sha256(tmp_path: Path) -> None:
    loaded = PersistedDocuments.load()
    assert len(loaded) == len(DOCUMENTS) > 10
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({CLUSTER_LIST: "{ tokens { id } }"}))
    with pytest.raises(InvalidManifest, match="sha256"):
        PersistedDocuments.load(forged)
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2")
    with pytest.raises(InvalidManifest):
        PersistedDocuments.load(broken)


async def test_a_deployments_own_manifest_replaces_the_contracts(
    sqlite_url: str, tmp_path: Path
) -> None:
    text = "query Mine { clusters { id } }"
    digest = hashlib.sha256(text.encode()).hexdigest()
    own = tmp_path / "own.json"
    own.write_text(json.dumps({digest: text}))
    async with serving(sqlite_url, persisted_documents="only", persisted_documents_file=own) as api:
        token = await api.token()
        answer = await post(api, persisted(digest), token)
        assert answer["data"] == {"clusters": [{"id": api.cluster_id}]}
        contract = await api.client.post(
            "/graphql", json=persisted(CLUSTER_LIST), headers={"Authorization": f"Bearer {token}"}
        )
        assert_json_error(contract, 400, "PERSISTED_DOCUMENT_NOT_FOUND")
