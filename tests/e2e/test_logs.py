"""The running service's logs as a log pipeline reads them (BUDCLUSTER_LOG_FORMAT=json).

Covers: every line on stderr is one JSON object; a request's `X-Request-ID` comes back in the
response and stamps the lines logged while it is handled (uvicorn's access line, switched on
here: it is off by default), with the caller as a token id and the operation's name; a request
without one gets an id made for it; the token itself, sent with every request, appears in no
line; an unusable log format stops the service with one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ServiceFactory, embedded_env, printed_tokens, run_cli

pytestmark = pytest.mark.e2e


async def test_json_lines_with_request_ids_and_no_token(
    services: ServiceFactory, tmp_path: Path
) -> None:
    env = embedded_env(tmp_path / "data", BUDCLUSTER_LOG_FORMAT="json", BUDCLUSTER_ACCESS_LOG="1")
    service = await services.start("json-logs", env)
    try:
        [token] = printed_tokens(service.stdout())
        headers = {"Authorization": f"Bearer {token}", "X-Request-ID": "probe-7f3a"}
        async with httpx.AsyncClient(timeout=10) as client:
            named = await client.post(
                service.url,
                json={"query": "query Probe { clusters { id } }", "operationName": "Probe"},
                headers=headers,
            )
            unnamed = await client.post(
                service.url,
                json={"query": "{ clusters { id } }"},
                headers={"Authorization": f"Bearer {token}"},
            )
            refused = await client.post(
                service.url,
                json={"query": "{ clusters { id } }"},
                headers={"Authorization": f"Bearer {token}x", "X-Request-ID": "bad token!"},
            )
        assert named.headers["x-request-id"] == "probe-7f3a"
        made = unnamed.headers["x-request-id"]
        assert len(made) == 32 and made != "probe-7f3a"
        assert refused.status_code == 401 and refused.headers["x-request-id"] not in (
            "bad token!",
            "probe-7f3a",
        )
    finally:
        await service.stop()
    _, stderr_path = service._paths()
    lines = [line for line in stderr_path.read_text().splitlines() if line.strip()]
    events, not_json = [], []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            not_json.append(line)
    assert not not_json, not_json  # every line is one JSON object
    assert all({"ts", "level", "logger", "msg"} <= set(e) for e in events)
    probe = [e for e in events if e.get("request_id") == "probe-7f3a"]
    assert probe, lines[-20:]
    assert any(e.get("operation") == "Probe" for e in probe), probe
    assert all(e.get("principal_id", "").startswith("token:") for e in probe), probe
    assert any(e.get("request_id") == made for e in events)
    assert token not in stderr_path.read_text()


async def test_an_unusable_log_format_is_refused(tmp_path: Path) -> None:
    refused = await run_cli(
        embedded_env(tmp_path, BUDCLUSTER_LOG_FORMAT="xml"), "serve", check=False
    )
    assert refused.returncode == 2 and "BUDCLUSTER_LOG_FORMAT" in refused.stderr
    assert "Traceback" not in refused.stderr
