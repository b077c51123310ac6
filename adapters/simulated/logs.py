"""What a simulated workload's pods write: log lines made from its record, as its containers
would have written them (the simulated cluster runs nothing, so it keeps no text).

Each pod of a workload (`<workload>-<index>`, one per pod of every pod set) writes, at the
moments its record holds: where it was scheduled, that it started, a progress line every
`STEP_SECONDS` of (simulated) run time (after what it read of its tenant's secrets, by
name and length) (fewer on a long run: at most `MAX_STEPS`), and how it
ended: the reason its record gives (completed, failed with its exit code, evicted with SIGTERM and
its grace period, preempted, deleted). Lines are made up to `now`, so a running workload's log
grows as time passes, and the same record always reads the same.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from adapters.simulated.engine import Pace, SimWorkload
from domain.ports.gateways import LogLine, Workload, WorkloadPhase

STEP_SECONDS = 30.0
"""A training loop's usual reporting interval (a progress line every 30 s of run time)."""
MAX_STEPS = 500


def mounts_of(workload: Workload) -> tuple[str, ...]:
    """What a workload's containers are given of its tenant's secrets, without the values: what
    its pods say they read (`SimWorkload.mounts`)."""
    said: list[str] = []
    for secret in workload.secrets:
        for key in secret.keys:
            size = len(secret.data[key].encode())
            where = (
                f"env {key}"
                if secret.ref.mount_path is None
                else f"file {secret.ref.mount_path.rstrip('/')}/{key}"
            )
            said.append(f"{where} from secret {secret.ref.name} ({size} bytes)")
    return tuple(said)


def pods_of(w: SimWorkload) -> list[str]:
    count = w.pod_count + sum(p.pod_count for p in w.pod_sets)
    return [f"{w.name}-{i}" for i in range(max(count, 1))]


def lines_of(w: SimWorkload, pace: Pace, now: datetime) -> list[LogLine]:
    """Every line the workload's pods wrote until `now`, oldest first."""
    made: list[LogLine] = []
    hosts = [p.node for p in w.placements] or [w.node or "?"]
    for index, pod in enumerate(pods_of(w)):
        host = hosts[index % len(hosts)]

        def say(at: datetime | None, text: str, pod: str = pod) -> None:
            if at is not None and at <= now:
                made.append(LogLine(at, pod, text))

        say(w.admitted_at, f"scheduled on {host}")
        if w.started_at is None:
            continue
        gpus = f"{w.gpu_count} x {w.gpu_type}" if w.gpu_count else "no GPU"
        say(w.started_at, f"started ({gpus})")
        for mount in w.mounts:
            say(w.started_at, f"read {mount}")
        end = w.finished_at if w.finished_at is not None else now
        ran = max(0.0, (min(end, now) - w.started_at).total_seconds()) * pace.time_scale
        if w.runtime_seconds is not None:  # (its end is due: the step that ends it may lag)
            ran = min(ran, w.runtime_seconds)
        every = max(STEP_SECONDS, (w.runtime_seconds or 0.0) / MAX_STEPS)
        steps = min(int(ran // every), MAX_STEPS)
        for step in range(1, steps + 1):
            simulated = step * every
            done = (
                f" ({min(100.0, 100 * simulated / w.runtime_seconds):.0f} %)"
                if w.runtime_seconds
                else ""
            )
            say(w.started_at + pace.real(simulated), f"step {step}: {simulated:.0f} s run{done}")
        if w.finished_at is not None:
            if w.reason.startswith("evicted: SIGTERM"):
                grace = w.reason.removeprefix("evicted: SIGTERM, then ").split(" ")[0]
                signalled = w.finished_at - timedelta(seconds=float(grace) / pace.time_scale)
                say(max(signalled, w.started_at), "SIGTERM received: writing a checkpoint")
                say(w.finished_at, "checkpoint written; exiting")
            elif w.phase is WorkloadPhase.FAILED:
                say(w.finished_at, f"error: {w.reason}")
            else:
                say(w.finished_at, f"exiting: {w.reason}")
    made.sort(key=lambda line: (line.at, line.pod))
    return made
