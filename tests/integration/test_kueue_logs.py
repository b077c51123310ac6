"""A job's logs on a real cluster: the Kubernetes gateway's `logs` against kmock's emulator over
HTTP (each log read asserted as sent: its path and query).

Covers: the lines of an attempt's pods (a Job's two pods) merged in time order, each with its
pod's name and its time from the timestamps=true prefix (nanoseconds, to the microsecond), read
from container "main" with tailLines 5000; a line without a time keeps the one before's (the
first ones the pod's start), and a CRLF ends a line as LF does; `pod=` reads that pod only, and
a pod not of the attempt gives [] with no read; `since` is sent as sinceTime (to the second) and
`tail` as tailLines (at most 5000), and both are honoured; the pods of another attempt, another
job or another cluster are never read; a pod gone between the list and the read (404), one whose
container is waiting to start (400) and one not on a node yet give no lines and no error; a pod
of several containers is read from "main", else from its default-container annotation, else its
first; no more than MAX_LOG_LINES lines, the last ones, however many pods; an unreachable or
unauthorized cluster raises GatewayUnavailable; no log text reaches budcluster's own log. And
the API client's read as the emulator answers it: sinceTime and tailLines applied, the times off
without timestamps=true, a pod gone None.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.clock import ManualClock
from adapters.kubernetes.api import WorkloadApi
from adapters.kubernetes.connection import KubeClusterApi
from adapters.kubernetes.gateway import KueueGateway
from domain.model.ids import ClusterId, JobId, TenantId
from domain.model.logs import MAX_LOG_LINES, LogLine
from domain.model.quota import tenant_namespace
from domain.ports.gateways import GatewayUnavailable
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, LogRead, kubeconfig_for, running_emulator

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
STARTED = NOW - timedelta(minutes=5)
CLUSTER = ClusterId(uuid.UUID("00000000-0000-4000-8000-0000000d2a11"))
TENANT = TenantId(uuid.UUID("7e000000-0000-4000-8000-000000000002"))
NS = tenant_namespace(TENANT)
JOB = JobId(uuid.UUID("10c00000-0000-4000-8000-000000000001"))
OTHER_JOB = JobId(uuid.UUID("10c00000-0000-4000-8000-000000000002"))
NODE = k8s_nodes.a100_gfd_node()["metadata"]["name"]
EVERY_LINE = {"container": "main", "timestamps": "true", "tailLines": str(MAX_LOG_LINES)}
Json = dict[str, Any]


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def stamped(seconds: float, text: str) -> str:
    """A line as the kubelet keeps it: its RFC 3339 time in nanoseconds, then the text."""
    time = at(seconds)
    return f"{time:%Y-%m-%dT%H:%M:%S}.{time.microsecond:06d}123Z {text}\n"


def identity(attempt: int = 0, job: JobId = JOB, cluster: ClusterId = CLUSTER) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "budcluster",
        "bud.ai/cluster-id": str(cluster),
        "bud.ai/job-id": str(job),
        "bud.ai/attempt": str(attempt),
    }


def pod(name: str, labels: dict[str, str] | None = None, **fields: Any) -> Json:
    """A running pod of attempt 0 on NODE, started at STARTED, with one container "main";
    `containers`, `annotations`, `node` (None: not on a node yet), `waiting` (a reason)."""
    metadata: Json = {"name": name, "namespace": NS, "labels": labels or identity()}
    if "annotations" in fields:
        metadata["annotations"] = fields["annotations"]
    containers = fields.get("containers", ["main"])
    spec: Json = {"containers": [{"name": c, "image": "x"} for c in containers]}
    if fields.get("node", NODE) is not None:
        spec["nodeName"] = fields.get("node", NODE)
    status: Json = {"phase": "Running", "startTime": STARTED.isoformat()}
    if "waiting" in fields:
        status["phase"] = "Pending"
        waiting = {"waiting": {"reason": fields["waiting"]}}
        status["containerStatuses"] = [{"name": c, "state": waiting} for c in containers]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def log_path(name: str) -> str:
    return f"/api/v1/namespaces/{NS}/pods/{name}/log"


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with running_emulator() as emulator:
        emulator.seed(k8s_nodes.a100_gfd_node())
        yield emulator


@contextlib.asynccontextmanager
async def gateway_on(to: str | KubeClusterApi) -> AsyncIterator[KueueGateway]:
    """The gateway, through a connection made from kubeconfig text, or this one."""
    api = await KubeClusterApi.from_kubeconfig(to) if isinstance(to, str) else to

    async def connect(_: ClusterId) -> WorkloadApi:
        return api

    gateway = KueueGateway(CLUSTER, connect=connect, clock=ManualClock(NOW))
    try:
        yield gateway
    finally:
        await gateway.close()
        await api.close()


def two_pods(emulator: KubeEmulator) -> None:
    """Attempt 0's Job, Indexed, with pods bud-a0-0 and bud-a0-1 whose lines interleave."""
    of_job = identity() | {"batch.kubernetes.io/job-name": "bud-a0"}
    first, second = pod("bud-a0-0", of_job), pod("bud-a0-1", of_job)
    emulator.seed(first, second)
    emulator.set_log(first, stamped(1, "rank 0 up") + stamped(3, "loss 0.9") + stamped(5, "done"))
    emulator.set_log(second, stamped(2, "rank 1 up") + stamped(4, "loss 0.8"))


# --- reading and merging ----------------------------------------------------------------------


async def test_an_attempts_pods_lines_come_merged_in_time_order(
    emulator: KubeEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    two_pods(emulator)
    caplog.set_level(logging.DEBUG)
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        lines = await gateway.logs(JOB, 0)
    assert lines == [
        LogLine(at(1), "bud-a0-0", "rank 0 up"),
        LogLine(at(2), "bud-a0-1", "rank 1 up"),
        LogLine(at(3), "bud-a0-0", "loss 0.9"),
        LogLine(at(4), "bud-a0-1", "loss 0.8"),
        LogLine(at(5), "bud-a0-0", "done"),
    ]
    assert all(line.at.tzinfo is UTC for line in lines)
    assert emulator.log_requests == [
        LogRead(log_path("bud-a0-0"), EVERY_LINE),
        LogRead(log_path("bud-a0-1"), EVERY_LINE),
    ]
    assert "loss" not in caplog.text  # what the containers wrote is never logged


async def test_a_line_without_a_time_keeps_the_one_before(emulator: KubeEmulator) -> None:
    printed = pod("bud-a0-0")
    emulator.seed(printed)
    emulator.set_log(
        printed,
        "no time here\n" + stamped(1, "Traceback (most recent call last):") + "  File x\r\n\n",
    )
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        lines = await gateway.logs(JOB, 0)
    assert lines == [
        LogLine(STARTED, "bud-a0-0", "no time here"),
        LogLine(at(1), "bud-a0-0", "Traceback (most recent call last):"),
        LogLine(at(1), "bud-a0-0", "  File x"),
        LogLine(at(1), "bud-a0-0", ""),
    ]


async def test_pod_reads_that_pod_only(emulator: KubeEmulator) -> None:
    two_pods(emulator)
    emulator.seed(pod("bud-a1-0", identity(attempt=1)))
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        lines = await gateway.logs(JOB, 0, pod="bud-a0-1")
        assert await gateway.logs(JOB, 0, pod="bud-a1-0") == []  # attempt 1's
        assert await gateway.logs(JOB, 0, pod="nowhere") == []
    assert [(line.pod, line.text) for line in lines] == [
        ("bud-a0-1", "rank 1 up"),
        ("bud-a0-1", "loss 0.8"),
    ]
    assert [read.path for read in emulator.log_requests] == [log_path("bud-a0-1")]


async def test_since_and_tail_are_sent_and_honoured(emulator: KubeEmulator) -> None:
    two_pods(emulator)
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        after = await gateway.logs(JOB, 0, since=at(2.5))
        last = await gateway.logs(JOB, 0, tail=1)
        both = await gateway.logs(JOB, 0, since=at(2.5), tail=1)
        to_the_second = await gateway.logs(JOB, 0, since=at(3) + timedelta(microseconds=50))
        at_most = await gateway.logs(JOB, 0, tail=MAX_LOG_LINES + 1)
    assert [line.text for line in after] == ["loss 0.9", "loss 0.8", "done"]
    assert [line.text for line in last] == ["loss 0.8", "done"]  # each pod's last
    assert [line.text for line in both] == ["loss 0.8", "done"]
    assert [line.text for line in to_the_second] == ["loss 0.8", "done"]
    assert len(at_most) == 5
    queries = [read.query for read in emulator.log_requests[::2]]  # bud-a0-0's
    assert queries == [
        EVERY_LINE | {"sinceTime": "2026-11-22T12:00:02Z"},
        EVERY_LINE | {"tailLines": "1"},
        EVERY_LINE | {"sinceTime": "2026-11-22T12:00:02Z", "tailLines": "1"},
        EVERY_LINE | {"sinceTime": "2026-11-22T12:00:03Z"},  # its line of 3 s: before `since`
        EVERY_LINE,
    ]


async def test_a_log_read_is_answered_as_the_api_server_does(emulator: KubeEmulator) -> None:
    two_pods(emulator)
    async with await KubeClusterApi.from_kubeconfig(kubeconfig_for(emulator)) as api:
        plain = await api.pod_log(namespace=NS, name="bud-a0-0", container="main", since=at(2.5))
        tail = await api.pod_log(namespace=NS, name="bud-a0-1", container=None, tail_lines=1)
        gone = await api.pod_log(namespace=NS, name="bud-a0-9", container="main")
    assert plain == "loss 0.9\ndone\n"  # from 12:00:02, without the times
    assert tail == "loss 0.8\n"
    assert gone is None


async def test_no_more_than_max_log_lines_the_last_ones(emulator: KubeEmulator) -> None:
    chatty = [pod(f"bud-a0-{i}") for i in range(2)]
    emulator.seed(*chatty)
    for i, each in enumerate(chatty):
        emulator.set_log(each, "".join(stamped(n + i / 2, f"{i}:{n}") for n in range(4000)))
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        lines = await gateway.logs(JOB, 0)
    assert len(lines) == MAX_LOG_LINES
    assert (lines[0].text, lines[-1].text) == ("0:1500", "1:3999")
    assert lines == sorted(lines, key=lambda line: line.at)


# --- which pods and containers ----------------------------------------------------------------


async def test_pods_of_other_attempts_jobs_and_clusters_are_never_read(
    emulator: KubeEmulator,
) -> None:
    ours = pod("bud-a0-0")
    others = [
        pod("bud-a1-0", identity(attempt=1)),
        pod("other-a0-0", identity(job=OTHER_JOB)),
        pod("theirs-a0-0", identity(cluster=ClusterId(uuid.uuid4()))),
        pod("unmanaged-0", {k: v for k, v in identity().items() if "managed-by" not in k}),
    ]
    emulator.seed(ours, *others)
    for each in (ours, *others):
        emulator.set_log(each, stamped(1, f"from {each['metadata']['name']}"))
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        lines = await gateway.logs(JOB, 0)
    assert lines == [LogLine(at(1), "bud-a0-0", "from bud-a0-0")]
    assert [read.path for read in emulator.log_requests] == [log_path("bud-a0-0")]


class PodGoneAfterTheList(KubeClusterApi):
    """The cluster as a pod of the attempt is deleted just after the gateway listed it."""

    emulator: KubeEmulator
    gone: Json

    async def list_objects(
        self, path: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> tuple[list[Json], str]:
        listed = await super().list_objects(
            path, label_selector=label_selector, field_selector=field_selector
        )
        if path == "/api/v1/pods":
            await self.emulator.delete_object(self.gone)
        return listed


async def test_a_pod_gone_or_not_started_has_no_lines_and_no_error(
    emulator: KubeEmulator,
) -> None:
    running, gone = pod("bud-a0-0"), pod("bud-a0-1")
    waiting = pod("bud-a0-2", waiting="ContainerCreating")
    gated = pod("bud-a0-3", node=None)  # Kueue has not admitted it: no node yet
    emulator.seed(running, gone, waiting, gated)
    emulator.set_log(running, stamped(1, "up"))
    emulator.set_log(gone, stamped(0, "about to go"))
    api = await PodGoneAfterTheList.from_kubeconfig(kubeconfig_for(emulator))
    assert isinstance(api, PodGoneAfterTheList)
    api.emulator, api.gone = emulator, gone
    async with gateway_on(api) as gateway:
        lines = await gateway.logs(JOB, 0)
    assert lines == [LogLine(at(1), "bud-a0-0", "up")]
    assert [read.path for read in emulator.log_requests] == [
        log_path(name) for name in ("bud-a0-0", "bud-a0-1", "bud-a0-2", "bud-a0-3")
    ]


async def test_a_pod_of_several_containers_is_read_from_its_main_one(
    emulator: KubeEmulator,
) -> None:
    service = identity() | {"bud.ai/release": "bud-svc-a0"}
    default = {"kubectl.kubernetes.io/default-container": "app"}
    emulator.seed(
        pod("ours-0", service, containers=["istio-proxy", "main"]),
        pod("chart-0", service, containers=["istio-proxy", "app"], annotations=default),
        pod("chart-1", service, containers=["server", "metrics"]),
    )
    async with gateway_on(kubeconfig_for(emulator)) as gateway:
        assert await gateway.logs(JOB, 0) == []
    read = {r.path.split("/")[-2]: r.query["container"] for r in emulator.log_requests}
    assert read == {"ours-0": "main", "chart-0": "app", "chart-1": "server"}


# --- a cluster that does not answer -----------------------------------------------------------


async def test_an_unreachable_or_unauthorized_cluster_raises(emulator: KubeEmulator) -> None:
    two_pods(emulator)
    async with gateway_on(kubeconfig_for("http://127.0.0.1:9")) as unreachable:
        with pytest.raises(GatewayUnavailable, match="cannot connect"):
            await unreachable.logs(JOB, 0)
    async with gateway_on(kubeconfig_for(emulator, token="not-the-token")) as refused:
        with pytest.raises(GatewayUnavailable, match="did not accept"):
            await refused.logs(JOB, 0)
    assert emulator.log_requests == []
