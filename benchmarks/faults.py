"""The fault suite: budcluster in production mode, hurt on purpose, and what it lost.

Starts its own PostgreSQL (initdb + pg_ctl in a temporary directory, its log in pg/server.log with
lock waits over 1 s logged) and Redis (redis-server), both on free ports, so it can kill and
restart them without touching the machine's; migrates, issues an operator token, then runs two
API processes (`budcluster serve`) and two arq workers (`budcluster worker`), every one with the
production settings (tasks through arq, events through Redis, each process supervising clusters
under leases).

Each scenario gets a simulated cluster of its own (one node of 4 GPUs, its quota 4 unless the
scenario lowers it) and a client that submits 1-GPU jobs of 1 to 4 s, a little faster than the
cluster finishes them, so there is always a queue and admission never rests. Like a careful user,
the client sends every submission with an idempotency key and, when the answer is lost (a
connection refused or cut, a timeout, HTTP 503, a GraphQL UNAVAILABLE), sends it again, to the
other API process, until it is answered; two first tries in three go to the first API process.
After 10 s the fault strikes; the load goes on 30 s past the fault's end, then stops, and the
suite waits (at most 90 s) for every job to finish. Meanwhile a sampler asks the API, every
100 ms and each API process in turn, what it reports admitted: the cluster's ClusterQueue `usage`
(GPUs `used`) and the GPUs of its ADMITTED and RUNNING jobs in the job list. And a subscriber,
on the second API process (the first while the second is down), holds a `jobUpdates`
subscription (graphql-transport-ws) from before the first submission to the end; after any
disconnect or error it connects again and resumes with `since`, the last sequence it holds.
Then the suite reads the database (jobs, job events, the simulated cluster's workloads, whose
times are the cluster's own) and PostgreSQL's log, and prints, per scenario:

- lost: submissions answered with a job that is not stored, submissions never answered, and jobs
  whose status is not their last event's (half-written);
- dup: jobs made twice for one idempotency key, an event repeated for one attempt, one attempt
  run twice on the cluster at once;
- broken: an event that does not start where the previous one ended;
- stuck: jobs not final 90 s after the load stopped, and jobs left PENDING (not handed to the
  cluster) longer than 30 s;
- over: samples in which the API showed more GPUs admitted than the quota, in `usage` or in the
  job list (as a share), and whether the cluster itself ever ran more than the quota (`!` after
  the share);
- cxl-run: jobs the database says CANCELLED that still ran on the cluster 15 s after the cancel
  (the level-triggered cancel's sweep is 10 s);
- starved stretches: spans in which a job waited while a GPU of the quota was free (a job not yet
  handed to the cluster waits as much as one queued on it; found on a 50 ms grid from the
  cluster's own admission times). `gap`: the longest such stretch from the fault's start to 30 s
  after its end (an outage's own length included); `recovery`: how long admission took to come
  back once the fault was over (the stretch under way at the fault's end, counted from the end,
  or any later one), the issue's "admission back within 5 s" (the baseline row shows both with
  no fault);
- untyped: answers that were neither data nor a typed error (plain HTTP 500, "Internal error.",
  an error without a code); transport failures while a process is down are counted apart
  (`refused`), as are typed UNAVAILABLE answers (`unavail`);
- deadlocks: `deadlock detected` in PostgreSQL's log during the scenario (its lock waits over 1 s
  are counted below the table, and the deadlocks' lines shown);
- sub-missing, sub-dup: transitions in the job_event table that the subscriber never received,
  and ones it received more than once (below the table: its resumes, any snapshot after the
  first, transitions received that are not stored, changes at or below a sequence it held);
- tracebacks: logged by budcluster's processes during the scenario.

Below the table, figures of some scenarios: the API samples against the quota (burst), what
happened during a Redis outage (admissions and completions on the cluster meanwhile, the longest
starved stretch inside it, and how long after Redis answered again the jobs submitted meanwhile
were handed over: PENDING -> QUEUED), the burst's hand-over times, and the memory rounds.

Aims (issues 10 and 27): lost, dup, broken, stuck, over, cxl-run, untyped, deadlocks,
sub-missing and sub-dup all zero; recovery within 5 s; during a Redis outage an admission gap of
at most 5 s and jobs submitted meanwhile handed over within 2 s of Redis answering; in the
memory scenario, RSS after the last round at most 5 % above RSS after the first.

    .venv/bin/python -m benchmarks.faults [--only name,...] [--keep] [--env NAME=VALUE ...]
        [--rounds 5] [--subscribers 100]

Scenarios: baseline, worker-kill (SIGKILL a worker that does not hold the cluster's lease; it is
not restarted until the scenario ends), lease-holder-kill (SIGKILL whichever process holds the
cluster's watch lease, read from the database's `lease` table, or from Redis where leases live
there), redis-outage (SIGKILL Redis, start it again 5 s later: it comes back empty, queues and
leases gone), redis-outage-60 (the same for 60 s), postgres-restart (immediate shutdown, started
again 5 s later), api-kill (SIGKILL the second API process, the subscriber's, mid-load, restarted
3 s later), cancel-storm (60 jobs submitted at once, then all cancelled at once, 60-way, while
admission runs), churn (jobs of 0.3 to 1 s at 6 per second: many finish-and-admit cycles), burst
(a quota of 2 GPUs on the node of 4, a light load, and 100 submissions of 0.3 to 1 s sent at once
through both API processes) and memory (`--rounds` rounds of `--subscribers` subscriptions, half
`jobUpdates` and half `scheduleTimeline`, on the second API process: they subscribe, receive the
changes of 4 short jobs, and go, half by `complete` and a close and half by cutting the
connection; the process's RSS, from /proc, before and after each round, and its growth from
the first round to the last). `--env` passes a setting to budcluster's processes (e.g.
BUDCLUSTER_GC_FREEZE=false, to compare).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from redis.asyncio import Redis

from benchmarks.event_to_screen import free_port, revision
from benchmarks.fault_subscribers import MemoryResult, ResumingSubscriber, memory_rounds

REPO = Path(__file__).resolve().parents[1]
PROJECT_ID = "5b0c3b8e-2f7e-4a8e-9a57-0c9d8a0c1a11"
GPU = "nvidia-a100-80gb"
CAPACITY = 4
FINAL = {"COMPLETED", "CANCELLED", "FAILED"}
WARMUP = 10.0
AFTER_FAULT = 30.0
SETTLE = 90.0
STUCK_PENDING = 30.0
CANCEL_LAG = 15.0
BURST = 100  # submissions sent at once in the burst scenario
BURST_QUOTA = 2  # its cluster's GPU quota (the node holds CAPACITY)
SUBSCRIBER_LAG = 20.0  # how long the subscriber may take to receive the last transitions
MEMORY_GROWTH = 5.0  # % of RSS after the first round of subscribers

SUBMIT = """mutation($input: SubmitJobInput!) {
  submitJob(input: $input) { __typename ... on Job { id status } ... on UserError { code message } }
}"""
CANCEL = """mutation($id: ID!) {
  cancelJob(id: $id) { __typename ... on Job { id status } ... on UserError { code message } }
}"""
USAGE = """query($id: ID!) {
  cluster(id: $id) { clusterQueues { name usage { resource used } } }
  jobs(filter: {clusterIds: [$id], statuses: [ADMITTED, RUNNING]}, first: 100) {
    edges { node { resources { totalGpus } } }
  }
}"""
QUEUES = """query($id: ID!) {
  cluster(id: $id) {
    clusterQueues {
      name cohort queueingStrategy
      resourceGroups {
        coveredResources
        flavors { flavor resources { name nominalQuota borrowingLimit lendingLimit } }
      }
      preemption { withinClusterQueue reclaimWithinCohort }
    }
  }
}"""
UPDATE_QUEUE = """mutation($input: ClusterQueueInput!) {
  updateClusterQueue(input: $input) { __typename ... on UserError { code message } }
}"""


# --- PostgreSQL and Redis of our own ---------------------------------------------------------


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


class Postgres:
    """A throwaway cluster: initdb, pg_ctl start/stop (immediate, like a crash)."""

    def __init__(self, root: Path) -> None:
        found = shutil.which("initdb") or next(
            iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)), None
        )
        if not found:
            raise SystemExit("faults: PostgreSQL's initdb is not installed")
        self.bindir = Path(found).parent
        self.dir = root / "pg"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        self.dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            os.chmod(self.dir.parent, 0o755)
        subprocess.run(
            _as_postgres(
                [str(self.bindir / "initdb"), "-D", str(self.dir), "-U", "postgres", "--auth=trust"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.start()

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=300 "
            "-c fsync=off -c synchronous_commit=off -c log_lock_waits=on -c deadlock_timeout=1s"
        )
        subprocess.run(
            _as_postgres(
                [
                    str(self.bindir / "pg_ctl"),
                    "-D",
                    str(self.dir),
                    "-l",
                    str(self.log),
                    "-o",
                    options,
                    "-w",
                    "start",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )

    @property
    def log(self) -> Path:
        """The server's log (pg_ctl -l: appended to across restarts)."""
        return self.dir / "server.log"

    def log_size(self) -> int:
        with contextlib.suppress(OSError):
            return self.log.stat().st_size
        return 0

    def log_since(self, offset: int) -> str:
        with self.log.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(
            _as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.dir), "-m", mode, "stop"]),
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


class RedisServer:
    """redis-server in the foreground, nothing kept on disk: a restart comes back empty."""

    def __init__(self, root: Path) -> None:
        if not shutil.which("redis-server"):
            raise SystemExit("faults: redis-server is not installed")
        self.dir = root / "redis"
        self.dir.mkdir()
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.dir / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.dir)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return
            time.sleep(0.05)
        raise SystemExit("faults: redis-server did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# --- budcluster's processes ------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    command: str  # serve | worker
    env: dict[str, str]
    logs: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log_path(self) -> Path:
        return self.logs / f"{self.name}-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        env = dict(self.env)
        if self.command == "serve":
            self.port = free_port()
            env["BUDCLUSTER_PORT"] = str(self.port)
        with self.log_path().open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "budcluster", self.command],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: its compute workers with it
            )

    async def healthy(self) -> None:
        if self.command != "serve":
            await asyncio.sleep(1.0)
            if not self.alive:
                raise SystemExit(f"faults: {self.name} exited\n{self.tail()}")
            return
        deadline = time.monotonic() + 60.0
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if not self.alive:
                    raise SystemExit(f"faults: {self.name} exited\n{self.tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{self.port}/healthz")).is_success:
                        return
                await asyncio.sleep(0.1)
        raise SystemExit(f"faults: {self.name} did not answer /healthz\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL, like a crash of the host it runs on: the process and what it started (its
        compute pool). SIGKILL of the main process alone leaves the pool's processes behind."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.alive:
            assert self.process is not None
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
        self.kill()  # whatever is left of its group

    def tail(self, chars: int = 3000) -> str:
        return self.log_path().read_text(errors="replace")[-chars:]

    def tracebacks(self) -> int:
        return sum(
            (self.logs / f"{self.name}-{n}.log").read_text(errors="replace").count("Traceback")
            for n in range(1, self.starts + 1)
        )


def run_cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "budcluster", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"faults: budcluster {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


# --- the client: a careful user -------------------------------------------------------------


@dataclass
class Answers:
    ok: int = 0
    refused: int = 0  # transport: connection refused or cut, timeouts (a process is down)
    unavailable: int = 0  # typed: HTTP 503 or GraphQL UNAVAILABLE
    untyped: int = 0
    untyped_examples: list[str] = field(default_factory=list)
    submitted: dict[str, str] = field(default_factory=dict)  # idempotency key -> job id
    unanswered: list[str] = field(default_factory=list)
    cancelled: dict[str, float] = field(default_factory=dict)  # job id -> when asked
    notes: list[str] = field(default_factory=list)  # figures of the scenario's own


class Client:
    def __init__(self, apis: list[Proc], token: str, answers: Answers) -> None:
        self.apis = apis
        self.answers = answers
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(10.0, connect=2.0),
            headers={"Authorization": f"Bearer {token}"},
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )
        self.turn = 0

    async def close(self) -> None:
        await self.http.aclose()

    def _untyped(self, text: str) -> None:
        self.answers.untyped += 1
        if len(self.answers.untyped_examples) < 5:
            self.answers.untyped_examples.append(text[:300])

    async def call(self, document: str, variables: dict[str, Any], give_up: float) -> Any:
        """The mutation's payload once answered; retried (next API process) until `give_up`.
        Two first tries in three go to the first API process, the third to the second one."""
        self.turn += 1
        api = 0 if self.turn % 3 else 1
        wait = 0.2
        while time.monotonic() < give_up:
            target = self.apis[api % len(self.apis)]
            api += 1
            try:
                response = await self.http.post(
                    target.url, json={"query": document, "variables": variables}
                )
            except httpx.HTTPError:
                self.answers.refused += 1
            else:
                answered = self._read(response)
                if answered is not None:
                    self.answers.ok += 1
                    return answered
            await asyncio.sleep(wait * random.uniform(0.5, 1.5))
            wait = min(wait * 2, 2.0)
        return None

    def _read(self, response: httpx.Response) -> Any:
        if response.status_code == 503 and "retry-after" in response.headers:
            self.answers.unavailable += 1
            return None
        try:
            body = response.json()
        except ValueError:
            self._untyped(f"HTTP {response.status_code}: {response.text}")
            return None
        errors = body.get("errors") or []
        if response.status_code != 200 or errors:
            codes = [(e.get("extensions") or {}).get("code") for e in errors]
            if codes and all(c == "UNAVAILABLE" for c in codes):
                self.answers.unavailable += 1
            else:
                self._untyped(f"HTTP {response.status_code}: {str(body)[:300]}")
            return None
        data = body.get("data") or {}
        payload = next(iter(data.values()), None)
        if payload is None:
            self._untyped(f"no data: {str(body)[:300]}")
        return payload

    async def submit(self, key: str, runtime: float) -> None:
        job = {
            "name": key,
            "projectId": PROJECT_ID,
            "clusterId": self.cluster_id,
            "jobType": "BATCH",
            "deploymentType": "DOCKER",
            "spec": {"simulation": {"runtime_seconds": runtime}},
            "resources": {"gpuType": GPU, "gpuCount": 1, "cpuCores": 1, "memoryGb": 4},
            "estimatedDurationSeconds": max(1, round(runtime)),
            "idempotencyKey": key,
        }
        payload = await self.call(SUBMIT, {"input": job}, time.monotonic() + 90)
        if payload is None:
            self.answers.unanswered.append(key)
        elif payload.get("__typename") == "Job":
            self.answers.submitted[key] = payload["id"]
        else:
            self._untyped(f"submit refused: {payload}")

    async def cancel(self, job_id: str) -> None:
        asked = time.time()
        payload = await self.call(CANCEL, {"id": job_id}, time.monotonic() + 60)
        if payload is not None and payload.get("__typename") == "Job":
            self.answers.cancelled[job_id] = asked

    cluster_id = ""


# --- the suite --------------------------------------------------------------------------------


@dataclass
class Load:
    rate: float = 1.6  # submissions per second
    runtime: tuple[float, float] = (1.0, 4.0)


Fault = Callable[[str], Awaitable[tuple[float, float]]]
Extra = Callable[["Client", str], Awaitable[None]]


@dataclass
class Spec:
    """A scenario: the fault (returns when it struck and when it was over), the load, what else
    is sent when it strikes, and the GPU quota of the cluster's ClusterQueue (at most CAPACITY)."""

    fault: Fault | None = None
    load: Load = field(default_factory=Load)
    extra: Extra | None = None
    quota: int = CAPACITY
    redis_outage: bool = False  # report admissions, completions and hand-overs during it


@dataclass
class Outage:
    length: float = 0.0
    admitted: int = 0  # on the cluster, during the outage
    finished: int = 0
    gap: float = 0.0  # the longest starved stretch inside the outage
    submitted: int = 0  # jobs created during the outage
    late: int = 0  # of them, handed over (PENDING -> QUEUED) only after Redis answered
    handover: float = 0.0  # the latest hand-over of them, after Redis answered again
    never: int = 0  # of them, never handed over


@dataclass
class Row:
    name: str
    jobs: int = 0
    lost: int = 0
    dup: int = 0
    broken: int = 0
    stuck: int = 0
    over_share: float = 0.0
    over_cluster: bool = False
    cancelled_running: int = 0
    gap: float = 0.0
    recovery: float = 0.0
    answers: Answers = field(default_factory=Answers)
    tracebacks: int = 0
    deadlocks: int = 0
    lock_waits: int = 0
    sub_missing: int = 0
    sub_dup: int = 0
    sub_extra: int = 0
    outage: Outage | None = None
    memory: MemoryResult | None = None
    detail: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)


class Suite:
    def __init__(self, root: Path, env: Sequence[str] = ()) -> None:
        self.root = root
        self.pg = Postgres(root)
        self.redis = RedisServer(root)
        logs = root / "logs"
        logs.mkdir()
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("BUDCLUSTER_") and k not in ("DATABASE_URL", "REDIS_URL")
        }
        self.env.update(
            PYTHONUNBUFFERED="1",
            DATABASE_URL=self.pg.url,
            REDIS_URL=self.redis.url,
            BUDCLUSTER_TASKS="arq",
            BUDCLUSTER_EVENTS="redis",
            BUDCLUSTER_REDIS_PREFIX=f"faults-{uuid.uuid4().hex[:8]}",
            BUDCLUSTER_TOKEN_PEPPER=secrets.token_hex(32),
            BUDCLUSTER_DATA_DIR=str(root / "data"),
            BUDCLUSTER_CREATE_DEFAULTS="false",
            BUDCLUSTER_AUTO_MIGRATE="false",
            BUDCLUSTER_SUPERVISOR_POLL_SECONDS="1",
            BUDCLUSTER_SIM_POLL_SECONDS="0.2",
            BUDCLUSTER_LOG_LEVEL="INFO",
            BUDCLUSTER_RATE_BURST="100000000",
            BUDCLUSTER_RATE_POINTS_PER_MINUTE="100000000",
            BUDCLUSTER_TENANT_RATE_BURST="100000000",
            BUDCLUSTER_TENANT_RATE_POINTS_PER_MINUTE="100000000",
        )
        for item in env:
            name, _, value = item.partition("=")
            self.env[name] = value
        self.apis = [Proc(f"api-{n}", "serve", self.env, logs) for n in (1, 2)]
        self.workers = [Proc(f"worker-{n}", "worker", self.env, logs) for n in (1, 2)]
        self.token = ""
        self.tracebacks = 0  # logged so far, by all processes
        self.clusters: list[str] = []

    @property
    def procs(self) -> list[Proc]:
        return [*self.apis, *self.workers]

    async def up(self) -> None:
        self.pg.init()
        self.redis.start()
        run_cli(self.env, "migrate")
        out = run_cli(self.env, "token", "create", "--name", "faults", "--new-tenant", "--operator")
        self.token = out.strip().splitlines()[-1].strip()
        for proc in self.procs:
            proc.start()
        await asyncio.gather(*(p.healthy() for p in self.procs))

    async def heal(self) -> None:
        """Everything running again before the next scenario."""
        if self.redis.process is None or self.redis.process.poll() is not None:
            self.redis.start()
        with contextlib.suppress(Exception):
            await (await asyncpg.connect(self.pg.url, timeout=2)).close()
            dead = [p for p in self.procs if not p.alive]
            for proc in dead:
                proc.start()
            await asyncio.gather(*(p.healthy() for p in dead))
            return
        self.pg.start()
        await self.heal()

    def down(self) -> None:
        for proc in self.procs:
            proc.stop()
        self.redis.kill()
        self.pg.stop("fast")

    async def lease_holder(self, cluster_id: str) -> Proc | None:
        """The process holding the cluster's watch lease: from the `lease` table where leases
        live in PostgreSQL, else from Redis (`<prefix>:lease:watch:<id>`)."""
        holder: str | None = None
        connection = await asyncpg.connect(self.pg.url, timeout=5)
        try:
            holder = await connection.fetchval(
                "select holder from lease where name = $1 and expires_at > clock_timestamp()",
                f"watch:{cluster_id}",
            )
            in_database = True
        except asyncpg.UndefinedTableError:
            in_database = False
        finally:
            await connection.close()
        if not in_database:
            redis = Redis.from_url(self.redis.url)
            try:
                value = await redis.get(
                    f"{self.env['BUDCLUSTER_REDIS_PREFIX']}:lease:watch:{cluster_id}"
                )
            finally:
                await redis.aclose()
            holder = None if value is None else value.decode()
        if holder is None:
            return None
        pid = int(holder.split(":")[1])
        return next((p for p in self.procs if p.alive and p.pid == pid), None)

    async def new_cluster(self, name: str, quota: int) -> str:
        cluster_id = run_cli(
            self.env,
            "cluster",
            "create-simulated",
            "--name",
            f"faults-{name}-{len(self.clusters) + 1}",
            "--nodes",
            f"1x{CAPACITY}x{GPU}",
            "--startup-seconds",
            "0.5",
        ).strip()
        self.clusters.append(cluster_id)
        if quota != CAPACITY:
            await self.set_quota(cluster_id, quota)
        deadline = time.monotonic() + 30
        while await self.lease_holder(cluster_id) is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"faults: nobody watches cluster {cluster_id}")
            await asyncio.sleep(0.2)
        return cluster_id

    async def graphql(self, document: str, variables: dict[str, Any], api: int = 0) -> Any:
        async with httpx.AsyncClient(
            timeout=10.0, headers={"Authorization": f"Bearer {self.token}"}
        ) as http:
            response = await http.post(
                self.apis[api].url, json={"query": document, "variables": variables}
            )
        body = response.json()
        if body.get("errors"):
            raise SystemExit(f"faults: {str(body['errors'])[:500]}")
        return body["data"]

    async def set_quota(self, cluster_id: str, gpus: int) -> None:
        """The default ClusterQueue's GPU quota, below what the node holds: the quota alone
        bounds admission, as Kueue's does."""
        data = await self.graphql(QUEUES, {"id": cluster_id})
        for queue in data["cluster"]["clusterQueues"]:
            for group in queue["resourceGroups"]:
                for flavor in group["flavors"]:
                    for resource in flavor["resources"]:
                        if "gpu" in resource["name"] and resource["nominalQuota"] > 0:
                            resource["nominalQuota"] = float(gpus)
            answer = await self.graphql(UPDATE_QUEUE, {"input": {"clusterId": cluster_id, **queue}})
            if answer["updateClusterQueue"]["__typename"] != "ClusterQueue":
                raise SystemExit(f"faults: quota not set: {answer}")

    def subscriber(self, cluster_id: str) -> ResumingSubscriber:
        """On the second API process (the one the client sends fewer first tries to); the first
        one when the second is down."""
        return ResumingSubscriber(
            lambda: [self.apis[1].ws_url, self.apis[0].ws_url], self.token, cluster_id
        )

    async def scenario(self, name: str, spec: Spec) -> Row:
        pg_log = self.pg.log_size()
        cluster_id = await self.new_cluster(name, spec.quota)
        subscriber = self.subscriber(cluster_id)
        await subscriber.start()
        answers = Answers()
        client = Client(self.apis, self.token, answers)
        client.cluster_id = cluster_id
        samples: list[Sample] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(self._sample(cluster_id, samples, stop))
        run = f"{name}-{len(self.clusters)}"  # idempotency keys are the tenant's: one set per run
        loader = asyncio.create_task(self._load(client, run, spec.load, stop))
        started = time.time()
        await asyncio.sleep(WARMUP)
        if spec.fault is None:
            window = (time.time(), time.time())
        else:
            window = await spec.fault(cluster_id)
        if spec.extra is not None:
            await spec.extra(client, run)
        await asyncio.sleep(max(0.0, window[1] + AFTER_FAULT - time.time()))
        stop.set()
        await loader  # every submission answered or given up
        await self._settle(cluster_id)
        await sampler
        await client.close()
        try:
            row = await self._judge(
                name, cluster_id, answers, samples, started, window, spec, subscriber
            )
        finally:
            await subscriber.stop()
        await self.heal()
        self._account(row, pg_log)
        return row

    async def memory(self, rounds: int = 5, subscribers: int = 100) -> Row:
        """Rounds of subscribers coming and going on the second API process; its RSS after each."""
        pg_log = self.pg.log_size()
        cluster_id = await self.new_cluster("memory", CAPACITY)
        subscriber = self.subscriber(cluster_id)
        await subscriber.start()
        answers = Answers()
        client = Client(self.apis[:1], self.token, answers)
        client.cluster_id = cluster_id
        started = time.time()

        async def submit(n: int) -> list[str]:
            keys = [f"memory-{len(self.clusters)}-{n}-{i}" for i in range(4)]
            await asyncio.gather(*(client.submit(k, 0.5) for k in keys))
            return [answers.submitted[k] for k in keys if k in answers.submitted]

        try:
            result = await memory_rounds(
                url=lambda: self.apis[1].ws_url,
                pid=lambda: self.apis[1].pid,
                token=self.token,
                cluster_id=cluster_id,
                submit=submit,
                rounds=rounds,
                subscribers=subscribers,
            )
            await self._settle(cluster_id)
            await client.close()
            end = time.time()
            row = await self._judge(
                "memory", cluster_id, answers, [], started, (end, end), Spec(), subscriber
            )
        finally:
            await subscriber.stop()
        row.memory = result
        shown = " -> ".join(f"{mb:.0f}" for mb in result.rss)
        row.figures.append(
            f"RSS of {self.apis[1].name} (MB, before and after each round of {subscribers} "
            f"subscribers): {shown}; after round 1: {result.growth:+.1f}% (aim <= 5%)"
        )
        if result.missing or result.no_diff or result.failed:
            row.detail.append(
                f"round subscribers: {result.failed} failed to subscribe, {result.missing} "
                f"completions not received, {result.no_diff} timelines without a diff"
            )
        row.detail.extend(result.errors)
        await self.heal()
        self._account(row, pg_log)
        return row

    def _account(self, row: Row, pg_log: int) -> None:
        """Tracebacks logged by the processes, deadlocks and lock waits logged by PostgreSQL,
        since the scenario began."""
        seen = sum(p.tracebacks() for p in self.procs)
        row.tracebacks, self.tracebacks = seen - self.tracebacks, seen
        text = self.pg.log_since(pg_log)
        row.deadlocks = text.count("deadlock detected")
        row.lock_waits = text.count("still waiting for")
        for line in text.splitlines():
            wanted = "deadlock detected" in line or "blocked by process" in line
            if wanted and len(row.detail) < 12:
                row.detail.append(f"postgres: {line.strip()[:240]}")

    async def _load(self, client: Client, name: str, load: Load, stop: asyncio.Event) -> None:
        tasks: list[asyncio.Task[None]] = []
        n = 0
        while not stop.is_set():
            n += 1
            runtime = round(random.uniform(*load.runtime), 2)
            tasks.append(asyncio.create_task(client.submit(f"{name}-{n}", runtime)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), random.expovariate(load.rate))
        await asyncio.gather(*tasks)

    async def _sample(self, cluster_id: str, samples: list[Sample], stop: asyncio.Event) -> None:
        """What the API reports admitted, every 100 ms, from each API process in turn: the GPU
        `usage` of the cluster's ClusterQueues, and the GPUs of its ADMITTED and RUNNING jobs as
        the job list shows them (a sample is skipped when the process does not answer)."""
        turn = 0
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(2.0, connect=1.0),
            headers={"Authorization": f"Bearer {self.token}"},
        ) as http:
            while not stop.is_set():
                turn += 1
                api = self.apis[turn % len(self.apis)]
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, TypeError):
                    response = await http.post(
                        api.url, json={"query": USAGE, "variables": {"id": cluster_id}}
                    )
                    data = response.json()["data"]
                    usage = sum(
                        u["used"]
                        for q in data["cluster"]["clusterQueues"]
                        for u in q["usage"]
                        if "gpu" in u["resource"]
                    )
                    edges = data["jobs"]["edges"]
                    listed = sum(e["node"]["resources"]["totalGpus"] for e in edges)
                    samples.append(Sample(time.time(), usage, listed))
                await asyncio.sleep(0.1)

    async def _settle(self, cluster_id: str) -> None:
        deadline = time.monotonic() + SETTLE
        connection = await asyncpg.connect(self.pg.url)
        try:
            while time.monotonic() < deadline:
                left = await connection.fetchval(
                    "select count(*) from job where cluster_id = $1 and status <> all($2::text[])",
                    uuid.UUID(cluster_id),
                    sorted(FINAL),
                )
                if left == 0:
                    return
                await asyncio.sleep(1)
        finally:
            await connection.close()

    async def _judge(
        self,
        name: str,
        cluster_id: str,
        answers: Answers,
        samples: list[Sample],
        started: float,
        window: tuple[float, float],
        spec: Spec,
        subscriber: ResumingSubscriber,
    ) -> Row:
        row = Row(name, answers=answers)
        quota = spec.quota
        cid = uuid.UUID(cluster_id)
        connection = await asyncpg.connect(self.pg.url)
        try:
            jobs = await connection.fetch(
                "select id, name, status, created_at, updated_at from job where cluster_id = $1",
                cid,
            )
            events = await connection.fetch(
                "select e.id, e.job_id, e.attempt, e.from_status, e.to_status, e.at "
                "from job_event e join job j on j.id = e.job_id where j.cluster_id = $1 "
                "order by e.id",
                cid,
            )
            workloads = await connection.fetch(
                "select job_id, attempt, phase, gpu_count, created_at, admitted_at, finished_at "
                "from simulated_workload where cluster_id = $1 and kind = 'workload'",
                cid,
            )
        finally:
            await connection.close()
        row.jobs = len(jobs)
        now = time.time()
        by_id = {str(j["id"]): j for j in jobs}

        # lost: answered but not stored, never answered, half-written
        missing = [k for k, job_id in answers.submitted.items() if job_id not in by_id]
        row.lost += len(missing) + len(answers.unanswered)
        if missing:
            row.detail.append(f"answered but not stored: {missing[:5]}")
        if answers.unanswered:
            row.detail.append(f"never answered: {answers.unanswered[:5]}")
        chains: dict[str, list[asyncpg.Record]] = defaultdict(list)
        for event in events:
            chains[str(event["job_id"])].append(event)
        for job_id, job in by_id.items():
            chain = chains.get(job_id, [])
            if not chain or chain[-1]["to_status"] != job["status"]:
                row.lost += 1
                row.detail.append(f"half-written {job['name']}: {job['status']} vs events")
            for before, after in itertools.pairwise(chain):
                if after["from_status"] != before["to_status"]:
                    row.broken += 1
                    row.detail.append(
                        f"broken {job['name']}: {before['to_status']} then "
                        f"{after['from_status']}->{after['to_status']}"
                    )
            repeated = Counter((e["attempt"], e["from_status"], e["to_status"]) for e in chain)
            row.dup += sum(c - 1 for c in repeated.values())

        # dup: two jobs for one idempotency key; one attempt running twice at once
        names = Counter(j["name"] for j in jobs)
        row.dup += sum(c - 1 for c in names.values())
        runs: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
        for w in workloads:
            if w["admitted_at"] is not None:
                runs[(str(w["job_id"]), w["attempt"])].append(
                    (w["admitted_at"], w["finished_at"] or now)
                )
        for spans in runs.values():
            spans.sort()
            row.dup += sum(1 for a, b in itertools.pairwise(spans) if b[0] < a[1])

        # stuck
        final_at: dict[str, float] = {}
        handed: dict[str, float] = {}  # the hand-over to the cluster (PENDING -> QUEUED)
        for job_id, chain in chains.items():
            for e in chain:
                if e["from_status"] == "PENDING" and job_id not in handed:
                    handed[job_id] = e["at"].timestamp()
                if e["to_status"] in FINAL:
                    final_at[job_id] = e["at"].timestamp()
        not_final = [j for j in jobs if j["status"] not in FINAL]
        slow = [
            j
            for j in jobs
            if handed.get(str(j["id"]), now) - j["created_at"].timestamp() > STUCK_PENDING
        ]
        row.stuck = len({j["id"] for j in [*not_final, *slow]})
        if not_final:
            row.detail.append(f"not final: {[(j['name'], j['status']) for j in not_final[:5]]}")
        if slow:
            row.detail.append(f"PENDING > {STUCK_PENDING:.0f} s: {len(slow)}")

        # over-admission: as the API showed it (usage and job list), and on the cluster itself
        over = [s for s in samples if max(s.usage, s.listed) > quota]
        row.over_share = len(over) / max(1, len(samples))
        if samples and (spec.quota != CAPACITY or over):
            row.figures.append(
                f"API samples: {len(samples)}; over the quota of {quota} GPUs: usage in "
                f"{sum(s.usage > quota for s in samples)} (max {max(s.usage for s in samples):g}),"
                f" job list in {sum(s.listed > quota for s in samples)} "
                f"(max {max(s.listed for s in samples)})"
            )
        points = sorted(
            [(a, w["gpu_count"]) for w in workloads if (a := w["admitted_at"]) is not None]
            + [
                (w["finished_at"], -w["gpu_count"])
                for w in workloads
                if w["admitted_at"] is not None and w["finished_at"] is not None
            ],
            key=lambda p: (p[0], p[1]),  # releases first at the same instant
        )
        used = 0
        for _, delta in points:
            used += delta
            row.over_cluster |= used > quota

        # cancelled but running
        cancelled_at = {
            job_id: final_at[job_id]
            for job_id, job in by_id.items()
            if job["status"] == "CANCELLED" and job_id in final_at
        }
        for w in workloads:
            job_id = str(w["job_id"])
            if job_id in cancelled_at and w["admitted_at"] is not None:
                ended = w["finished_at"] or now
                if ended - cancelled_at[job_id] > CANCEL_LAG:
                    row.cancelled_running += 1
                    row.detail.append(
                        f"cancelled but ran on {ended - cancelled_at[job_id]:.0f} s: "
                        f"{by_id[job_id]['name']}"
                    )

        begin, end = window
        if name == "baseline":  # no fault: the whole run after the warm-up
            begin, end = started + WARMUP, now - AFTER_FAULT
        stretches = starved(jobs, workloads, cancelled_at, begin, end + AFTER_FAULT, quota)
        row.gap = max((b - a for a, b in stretches), default=0.0)
        row.recovery = max((b - max(a, end) for a, b in stretches if b > end), default=0.0)
        if row.gap > 5:
            shown = ", ".join(
                f"{a - begin:+.1f}..{b - begin:+.1f}" for a, b in stretches if b - a > 2
            )
            row.detail.append(f"starved (s from the fault): {shown}")

        if spec.redis_outage:
            row.outage = outage = Outage(length=end - begin)
            admitted = [a for w in workloads if (a := w["admitted_at"]) is not None]
            outage.admitted = sum(begin <= a <= end for a in admitted)
            outage.finished = sum(
                begin <= f <= end for w in workloads if (f := w["finished_at"]) is not None
            )
            inside = starved(jobs, workloads, cancelled_at, begin, end, quota)
            outage.gap = max((b - a for a, b in inside), default=0.0)
            meanwhile = [str(j["id"]) for j in jobs if begin <= j["created_at"].timestamp() <= end]
            outage.submitted = len(meanwhile)
            outage.never = sum(job_id not in handed for job_id in meanwhile)
            outage.late = sum(handed.get(job_id, 0.0) > end for job_id in meanwhile)
            outage.handover = max(
                (max(0.0, handed[j] - end) for j in meanwhile if j in handed), default=0.0
            )
            row.figures.append(
                f"Redis down {outage.length:.1f} s: {outage.admitted} admitted and "
                f"{outage.finished} finished on the cluster meanwhile; admission gap in it "
                f"{outage.gap:.1f} s (aim <= 5 s); {outage.submitted} jobs submitted meanwhile, "
                f"{outage.late} of them handed over only after Redis answered, the last "
                f"{outage.handover:.1f} s after (aim <= 2 s)"
                + (f", {outage.never} never" if outage.never else "")
            )

        burst = [j for j in jobs if "-burst-" in j["name"]]
        if burst:
            waits = sorted(
                handed.get(str(j["id"]), now) - j["created_at"].timestamp() for j in burst
            )
            row.figures.append(
                f"{len(burst)} burst jobs handed over to the cluster (PENDING -> QUEUED) within "
                f"{waits[len(waits) // 2]:.1f} s (median), {waits[-1]:.1f} s (max)"
            )
        row.figures.extend(answers.notes)

        # the subscriber: every stored transition received once
        stored = Counter(
            (str(e["job_id"]), int(e["attempt"]), e["from_status"], str(e["to_status"]))
            for e in events
        )
        await subscriber.caught_up(stored, SUBSCRIBER_LAG)
        row.sub_missing, row.sub_dup, row.sub_extra = subscriber.compare(stored)
        resnapshots = subscriber.snapshots[1:]
        if row.sub_missing or row.sub_dup or row.sub_extra or resnapshots or subscriber.resumes:
            row.detail.append(
                f"subscriber: {subscriber.resumes} resumes, snapshots after the first: "
                f"{resnapshots}, {row.sub_extra} transitions not stored, "
                f"{subscriber.out_of_order} changes at or below a sequence held; "
                f"errors: {subscriber.errors[:3]}"
            )
        job_names = {job_id: job["name"] for job_id, job in by_id.items()}
        missed, too_often = subscriber.differences(stored)
        for what, keys in (("missed", missed), ("received too often", too_often)):
            if keys:
                listed = [
                    f"{job_names.get(j, j)} #{a} {f or '-'}->{t} (stored "
                    f"{stored[(j, a, f, t)]}, received {subscriber.received[(j, a, f, t)]})"
                    for j, a, f, t in keys[:3]
                ]
                row.detail.append(f"subscriber {what}: {len(keys)}: {'; '.join(listed)}")
        return row


@dataclass
class Sample:
    at: float
    usage: float  # GPUs `used` in the cluster's ClusterQueues' usage
    listed: int  # GPUs of its ADMITTED and RUNNING jobs in the job list


def starved(
    jobs: Sequence[Any],
    workloads: Sequence[Any],
    cancelled_at: dict[str, float],
    start: float,
    end: float,
    capacity: int = CAPACITY,
    step: float = 0.05,
) -> list[tuple[float, float]]:
    """The stretches within [start, end] in which a job waited while a GPU of the quota was free
    (and so nothing was admitted): what a fault costs admission, seen from the user's side."""
    admitted: dict[str, float] = {}
    for w in workloads:
        if w["admitted_at"] is not None:
            job_id = str(w["job_id"])
            admitted[job_id] = min(admitted.get(job_id, w["admitted_at"]), w["admitted_at"])
    waits = []
    for j in jobs:
        job_id = str(j["id"])
        until = min(admitted.get(job_id, float("inf")), cancelled_at.get(job_id, float("inf")))
        waits.append((j["created_at"].timestamp(), until))
    holds = [
        (w["admitted_at"], w["finished_at"] or float("inf"), w["gpu_count"])
        for w in workloads
        if w["admitted_at"] is not None
    ]
    stretches: list[tuple[float, float]] = []
    since: float | None = None
    t = start
    while t <= end:
        waiting = any(a <= t < b for a, b in waits)
        used = sum(g for a, b, g in holds if a <= t < b)
        if waiting and used < capacity:
            since = t if since is None else since
        elif since is not None:
            stretches.append((since, t))
            since = None
        t += step
    if since is not None:
        stretches.append((since, t))
    return stretches


# --- the faults -------------------------------------------------------------------------------


def faults(suite: Suite) -> dict[str, Spec]:
    async def worker_kill(cluster_id: str) -> tuple[float, float]:
        holder = await suite.lease_holder(cluster_id)
        victim = next(w for w in suite.workers if w is not holder)
        at = time.time()
        victim.kill()
        return at, at

    async def lease_holder_kill(cluster_id: str) -> tuple[float, float]:
        holder = await suite.lease_holder(cluster_id)
        if holder is None:
            raise SystemExit("faults: no lease holder to kill")
        print(f"  killing the lease holder, {holder.name}", flush=True)
        at = time.time()
        holder.kill()
        return at, at

    def redis_outage(seconds: float) -> Fault:
        async def outage(cluster_id: str) -> tuple[float, float]:
            at = time.time()
            suite.redis.kill()
            await asyncio.sleep(seconds)
            await asyncio.to_thread(suite.redis.start)  # returns once it answers
            return at, time.time()

        return outage

    async def postgres_restart(cluster_id: str) -> tuple[float, float]:
        at = time.time()
        await asyncio.to_thread(suite.pg.stop)
        await asyncio.sleep(5)
        await asyncio.to_thread(suite.pg.start)
        return at, time.time()

    async def api_kill(cluster_id: str) -> tuple[float, float]:
        victim = suite.apis[1]  # the subscriber's
        at = time.time()
        victim.kill()
        await asyncio.sleep(3)
        victim.start()
        await victim.healthy()
        return at, time.time()

    async def storm(client: Client, name: str) -> None:
        keys = [f"{name}-storm-{n}" for n in range(60)]
        await asyncio.gather(*(client.submit(k, 6.0) for k in keys))
        await asyncio.sleep(3)
        ids = [client.answers.submitted[k] for k in keys if k in client.answers.submitted]
        await asyncio.gather(*(client.cancel(i) for i in ids))

    async def burst(client: Client, name: str) -> None:
        runtimes = [round(random.uniform(0.3, 1.0), 2) for _ in range(BURST)]
        began = time.monotonic()
        await asyncio.gather(
            *(client.submit(f"{name}-burst-{n}", r) for n, r in enumerate(runtimes))
        )
        client.answers.notes.append(
            f"{BURST} submissions at once answered in {time.monotonic() - began:.1f} s"
        )

    async def now(cluster_id: str) -> tuple[float, float]:
        at = time.time()
        return at, at

    return {
        "baseline": Spec(),
        "worker-kill": Spec(worker_kill),
        "lease-holder-kill": Spec(lease_holder_kill),
        "redis-outage": Spec(redis_outage(5), redis_outage=True),
        "redis-outage-60": Spec(redis_outage(60), redis_outage=True),
        "postgres-restart": Spec(postgres_restart),
        "api-kill": Spec(api_kill),
        "cancel-storm": Spec(now, extra=storm),
        "churn": Spec(now, Load(rate=6.0, runtime=(0.3, 1.0))),
        "burst": Spec(now, Load(rate=0.5, runtime=(1.0, 2.0)), extra=burst, quota=BURST_QUOTA),
    }


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'scenario':<18} {'jobs':>5} {'lost':>4} {'dup':>4} {'broken':>6} {'stuck':>5} "
        f"{'over':>6} {'cxl-run':>7} {'gap s':>6} {'recov s':>7} {'untyped':>7} {'unavail':>7} "
        f"{'refused':>7} {'deadlocks':>9} {'sub-missing':>11} {'sub-dup':>7} {'tracebacks':>10}"
    )
    print(header)
    for r in rows:
        over = f"{r.over_share * 100:.1f}%" + ("!" if r.over_cluster else "")
        print(
            f"{r.name:<18} {r.jobs:>5} {r.lost:>4} {r.dup:>4} {r.broken:>6} {r.stuck:>5} "
            f"{over:>6} {r.cancelled_running:>7} {r.gap:>6.1f} {r.recovery:>7.1f} "
            f"{r.answers.untyped:>7} {r.answers.unavailable:>7} {r.answers.refused:>7} "
            f"{r.deadlocks:>9} {r.sub_missing:>11} {r.sub_dup:>7} {r.tracebacks:>10}"
        )
    for r in rows:
        for line in r.figures:
            print(f"  {r.name}: {line}")
        if r.lock_waits:
            print(f"  {r.name}: lock waits over 1 s in PostgreSQL's log: {r.lock_waits}")
    for r in rows:
        for line in r.detail[:12] + r.answers.untyped_examples:
            print(f"  {r.name}: {line}")
    met = all(
        r.lost == r.dup == r.broken == r.stuck == r.cancelled_running == r.answers.untyped == 0
        and r.deadlocks == r.sub_missing == r.sub_dup == r.sub_extra == 0
        and r.over_share == 0
        and not r.over_cluster
        and r.recovery <= 5.0
        and (
            r.outage is None
            or (r.outage.gap <= 5.0 and r.outage.handover <= 2.0 and r.outage.never == 0)
        )
        and (r.memory is None or r.memory.growth <= MEMORY_GROWTH)
        for r in rows
    )
    print(
        f"aims {'met' if met else 'NOT met'}: all zero, recovery <= 5 s; during a Redis outage "
        f"admission gap <= 5 s and hand-over <= 2 s after it; memory growth after round 1 <= "
        f"{MEMORY_GROWTH:.0f}%"
    )


async def main_async(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="budcluster-faults-"))
    suite = Suite(root, args.env)
    print(f"code: {revision()}; logs in {root / 'logs'}", flush=True)
    rows: list[Row] = []
    try:
        table = faults(suite)
        names = [*table, "memory"]
        chosen = args.only.split(",") if args.only else names
        for name in chosen:
            if name not in names:
                raise SystemExit(f"faults: no scenario {name!r}; there are {', '.join(names)}")
        await suite.up()
        for name in chosen:
            began = time.monotonic()
            print(f"{name} ...", flush=True)
            if name == "memory":
                rows.append(await suite.memory(args.rounds, args.subscribers))
            else:
                rows.append(await suite.scenario(name, table[name]))
            print(f"  done in {time.monotonic() - began:.0f} s", flush=True)
        print_table(rows)
        return 0
    finally:
        suite.down()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so that SIGTERM, too, stops what the suite started


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", help="comma-separated scenario names")
    p.add_argument("--keep", action="store_true", help="keep the logs and data directory")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for budcluster's processes (repeatable), e.g. BUDCLUSTER_GC_FREEZE=false",
    )
    p.add_argument("--rounds", type=int, default=5, help="memory: rounds of subscribers")
    p.add_argument("--subscribers", type=int, default=100, help="memory: subscribers a round")
    return asyncio.run(main_async(p.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
