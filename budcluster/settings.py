"""Settings from the environment. With nothing set, budcluster runs embedded: a SQLite file in
`./.budcluster`, in-process tasks and events, and a simulated cluster created on first start.
Setting DATABASE_URL (PostgreSQL) and REDIS_URL moves it to production mode: arq workers and
events across API processes through Redis.

Kubeconfigs are sealed with a keyring of RSA keys (adapters/secrets): BUDCLUSTER_KEYS_DIR (a
directory of `key-<version>.pem` files) or BUDCLUSTER_KEYS_PEM (concatenated PEM keys), with
BUDCLUSTER_ACTIVE_KEY naming the active key id. Embedded, with neither set, a key is generated in
`<data dir>/keys` on first use; production must configure one.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters.kubernetes.benchmark_job import BENCHMARK_IMAGE
from adapters.simulated.config import DEFAULT_NODES
from domain.model.outbound import AllowList


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"BUDCLUSTER_{name}")
    return value if value not in (None, "") else default


def _flag(name: str, default: bool) -> bool:
    value = _env(name)
    if value is None:
        return default
    return value.lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(".budcluster")
    database_url: str = ""
    redis_url: str | None = None
    tasks: str = "inprocess"
    """`inprocess` or `arq`."""
    events: str = "inprocess"
    """`inprocess` or `redis`."""
    run_supervisor: bool = True
    """Watch clusters from this process (leases make several processes safe)."""
    create_defaults: bool = True
    """On first start: a simulated cluster, and an admin token printed once."""
    auto_migrate: bool = True
    host: str = "127.0.0.1"
    port: int = 8000
    allowed_origins: tuple[str, ...] = ()
    audit_retention_days: int = 365
    """Audit events older than this are deleted."""
    log_format: str = "text"
    """`text` (a person at a terminal) or `json` (one object per line, for log pipelines)."""
    access_log: bool = False
    """uvicorn's line per request."""
    otlp_traces_url: str | None = None
    """Where spans go (OTLP over HTTP); None: no traces. From BUDCLUSTER_OTLP_ENDPOINT or
    OpenTelemetry's OTEL_EXPORTER_OTLP_ENDPOINT (a collector's base URL: /v1/traces is added)
    or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL)."""
    tracing: bool = False
    """Instrument this process (on with an OTLP URL; tests turn it on with their own provider)."""
    worker_metrics_host: str = "0.0.0.0"
    worker_metrics_port: int = 0
    """A worker's /metrics, /health and /ready (the Helm chart uses 9100); 0: none."""
    persisted_documents: str = "off"
    """`off`: any document, and persisted ones by hash; `only`: persisted documents alone."""
    persisted_documents_file: Path | None = None
    """A manifest of hash: document; None: the contract's, shipped in the package."""
    redis_prefix: str = "budcluster"
    token_pepper: bytes = field(default=b"", repr=False)
    """From BUDCLUSTER_TOKEN_PEPPER; empty: a private file in the data directory (`pepper()`)."""
    sim_nodes: str = DEFAULT_NODES
    sim_time_scale: float = 1.0
    sim_poll_seconds: float = 0.5
    serving_host: str = "127.0.0.1"
    """Where the simulated clusters' model endpoints listen (this machine only, by default)."""
    serving_port: int = 0
    """0: a free port, kept across restarts (the port the deployments' endpoint URLs name, while
    it is free), so their URLs keep working."""
    outbound_allow: tuple[str, ...] = ()
    """Hosts (`vllm.internal`, `*.svc.example`) and address ranges (`10.0.0.0/8`) that callers'
    URLs may reach besides public addresses (domain.model.outbound); metadata services never."""
    supervisor_poll_seconds: float = 5.0
    catch_up_seconds: float = 2.0
    event_retention: int = 10_000
    subscriber_buffer: int = 64
    timeline_debounce_seconds: float = 0.05
    """How long a burst of events may go on before the timeline is recomputed once for it."""
    timeline_period_seconds: float = 30.0
    cluster_sync_seconds: float = 180.0
    budget_check_seconds: float = 5.0
    """How often running jobs' costs are checked against their budgets (`BudgetService`)."""
    fleet_balance_seconds: float = 15.0
    """How often each fleet's waiting jobs are weighed against its other members (and moved:
    `FleetBalancer`); never more often than twice the last pass took."""
    drain_seconds: float = 5.0
    """How often the drains under way are advanced (their jobs' grace periods are tens of
    seconds: Kubernetes' default is 30)."""
    autoscale_seconds: float = 15.0
    """How often deployments that scale themselves read their load and scale (the Horizontal
    Pod Autoscaler's default sync period)."""
    serving_hold_seconds: float = 600.0
    """How long a request to a simulated deployment at zero replicas waits for one to start."""
    """The full sync of every real cluster (nodes and health), beside the node watch."""
    orphan_grace_seconds: float = 600.0
    """How long objects of budcluster's with no job stay on a real cluster before removal."""
    kube_plain_http: bool = False
    """Whether a kubeconfig may send its credentials to an http:// API server (refused by
    default: they would cross the network in clear)."""
    helm_executable: str = "helm"
    """The helm binary SERVICE jobs on real clusters are installed with (through pyhelm3)."""
    helm_timeout: str = "5m"
    benchmark_image: str = BENCHMARK_IMAGE
    """The image benchmarks on real clusters run `vllm bench serve` from (vLLM 0.11 or later)."""
    log_level: str = "INFO"
    max_body_bytes: int = 1 << 20
    """Request bodies above this are refused with 413 before they are read; also the largest
    WebSocket message."""
    header_timeout_seconds: float = 10.0
    """How long a client may take to send a request's headers (and, again, its body)."""
    token_check_seconds: float = 2.0
    """How often open WebSockets are checked against revoked and expired tokens."""
    gc_freeze: bool = True
    """Keep the survivors of each full garbage collection out of the next ones (a full
    collection of everything every 10 minutes): budcluster/collector.py."""
    compute_workers: int = 1
    """Worker processes for CPU-heavy work (estimates, previews, kubeconfigs); 0: threads."""
    operation_budget: int = 10_000
    """The most points (schema/cost.py) one GraphQL operation may cost."""
    rate_points_per_minute: int = 60_000
    """What each token (or address, without one) may spend a minute, on average..."""
    rate_burst: int = 50_000
    """...and at once. At least the operation budget."""
    tenant_rate_points_per_minute: int = 180_000
    """What all of one tenant's tokens together may spend a minute, on average (each
    operation is paid from its token's bucket and its tenant's)..."""
    tenant_rate_burst: int = 150_000
    """...and at once. At least a token's: one client alone meets its token's limit first."""
    max_response_bytes: int = 8 << 20
    """An answer (or a WebSocket `next`) longer than this is replaced by RESPONSE_TOO_LARGE."""
    anonymous_introspection: bool | None = None
    """Whether callers without a token may introspect the schema; None: embedded yes,
    production no (`allows_anonymous_introspection`)."""
    tenant_heavy_concurrency: int = 2
    """Heavy operations (previews, long schedules, big pages, subscription snapshots) one
    tenant may run at once in an API process; more wait their turn (schema/fairness.py)."""
    tenant_subscriptions: int = 1000
    """Subscriptions one tenant may hold open in an API process."""
    reservation_max_hours: float = 168.0
    """How long one tenant's capacity reservation may last..."""
    reservation_max_lead_days: float = 30.0
    """...how far ahead it may start..."""
    reservation_max_share: float = 0.5
    """...and the share of a ClusterQueue's GPU quota in a flavor a tenant may hold reserved
    at once (the operator's reservations are not bounded)."""
    keys_dir: Path | None = None
    keys_pem: str = field(default="", repr=False)
    """PEM private keys: never in a repr."""
    active_key: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_embedded(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def allows_anonymous_introspection(self) -> bool:
        if self.anonymous_introspection is None:
            return self.is_embedded
        return self.anonymous_introspection

    @property
    def generated_keys_dir(self) -> Path | None:
        """Where an embedded run makes its own key when none is configured; production has none."""
        return self.data_dir / "keys" if self.is_embedded else None

    def pepper(self) -> bytes:
        """The key token hashes are made with: the configured one, else the data directory's
        (made on first use)."""
        return self.token_pepper or _pepper_file(self.data_dir)

    @property
    def queue_name(self) -> str:
        return f"{self.redis_prefix}:queue"

    @property
    def event_channel(self) -> str:
        return f"{self.redis_prefix}:events"

    @classmethod
    def from_env(cls) -> Settings:
        data_dir = Path(_env("DATA_DIR", ".budcluster") or ".budcluster")
        database_url = (
            _env("DATABASE_URL")
            or os.environ.get("DATABASE_URL")
            or (f"sqlite:///{(data_dir / 'budcluster.db').resolve()}")
        )
        redis_url = _env("REDIS_URL") or os.environ.get("REDIS_URL") or None
        embedded = database_url.startswith("sqlite")
        tasks = _env("TASKS", "arq" if redis_url and not embedded else "inprocess") or "inprocess"
        events = _env("EVENTS", "redis" if redis_url and not embedded else "inprocess") or ""
        if tasks not in ("inprocess", "arq"):
            raise ValueError("BUDCLUSTER_TASKS must be inprocess or arq")
        if events not in ("inprocess", "redis"):
            raise ValueError("BUDCLUSTER_EVENTS must be inprocess or redis")
        if (tasks == "arq" or events == "redis") and not redis_url:
            raise ValueError("arq tasks and Redis events need REDIS_URL")
        origins = tuple(
            o.strip() for o in (_env("ALLOWED_ORIGINS", "") or "").split(",") if o.strip()
        )
        keys_dir = _env("KEYS_DIR")
        outbound_allow = tuple(
            e.strip() for e in (_env("OUTBOUND_ALLOW", "") or "").split(",") if e.strip()
        )
        try:
            AllowList.parse(outbound_allow)
        except ValueError as exc:
            raise ValueError(f"BUDCLUSTER_OUTBOUND_ALLOW: {exc}") from None
        log_format = (_env("LOG_FORMAT", "text") or "text").lower()
        if log_format not in ("text", "json"):
            raise ValueError("BUDCLUSTER_LOG_FORMAT must be text or json")
        persisted = (_env("PERSISTED_DOCUMENTS", "off") or "off").lower()
        if persisted not in ("off", "only"):
            raise ValueError("BUDCLUSTER_PERSISTED_DOCUMENTS must be off or only")
        persisted_file = _env("PERSISTED_DOCUMENTS_FILE")
        traces_url = otlp_traces_url(os.environ)
        settings = cls(
            data_dir=data_dir,
            database_url=database_url,
            redis_url=redis_url,
            tasks=tasks,
            events=events,
            run_supervisor=_flag("RUN_SUPERVISOR", True),
            create_defaults=_flag("CREATE_DEFAULTS", embedded),
            auto_migrate=_flag("AUTO_MIGRATE", embedded),
            host=_env("HOST", "127.0.0.1") or "127.0.0.1",
            port=int(_env("PORT", "8000") or 8000),
            allowed_origins=origins,
            audit_retention_days=int(_env("AUDIT_RETENTION_DAYS", "365") or 365),
            log_format=log_format,
            access_log=_flag("ACCESS_LOG", False),
            otlp_traces_url=traces_url,
            tracing=traces_url is not None,
            worker_metrics_host=_env("WORKER_METRICS_HOST", "0.0.0.0") or "0.0.0.0",
            worker_metrics_port=int(_env("WORKER_METRICS_PORT", "0") or 0),
            persisted_documents=persisted,
            persisted_documents_file=Path(persisted_file) if persisted_file else None,
            redis_prefix=_env("REDIS_PREFIX", "budcluster") or "budcluster",
            token_pepper=(_env("TOKEN_PEPPER") or "").encode(),
            sim_nodes=_env("SIM_NODES", DEFAULT_NODES) or DEFAULT_NODES,
            sim_time_scale=float(_env("SIM_TIME_SCALE", "1.0") or 1.0),
            sim_poll_seconds=float(_env("SIM_POLL_SECONDS", "0.5") or 0.5),
            serving_host=_env("SERVING_HOST", "127.0.0.1") or "127.0.0.1",
            serving_port=int(_env("SERVING_PORT", "0") or 0),
            outbound_allow=outbound_allow,
            supervisor_poll_seconds=float(_env("SUPERVISOR_POLL_SECONDS", "5") or 5),
            catch_up_seconds=float(_env("CATCH_UP_SECONDS", "2") or 2),
            event_retention=int(_env("EVENT_RETENTION", "10000") or 10000),
            subscriber_buffer=int(_env("SUBSCRIBER_BUFFER", "64") or 64),
            timeline_debounce_seconds=float(_env("TIMELINE_DEBOUNCE_SECONDS", "0.05") or 0.05),
            timeline_period_seconds=float(_env("TIMELINE_PERIOD_SECONDS", "30") or 30),
            cluster_sync_seconds=float(_env("CLUSTER_SYNC_SECONDS", "180") or 180),
            budget_check_seconds=float(_env("BUDGET_CHECK_SECONDS", "5") or 5),
            fleet_balance_seconds=float(_env("FLEET_BALANCE_SECONDS", "15") or 15),
            drain_seconds=float(_env("DRAIN_SECONDS", "5") or 5),
            autoscale_seconds=float(_env("AUTOSCALE_SECONDS", "15") or 15),
            serving_hold_seconds=float(_env("SERVING_HOLD_SECONDS", "600") or 600),
            orphan_grace_seconds=float(_env("ORPHAN_GRACE_SECONDS", "600") or 600),
            kube_plain_http=_flag("KUBE_PLAIN_HTTP", False),
            helm_executable=_env("HELM", "helm") or "helm",
            helm_timeout=_env("HELM_TIMEOUT", "5m") or "5m",
            benchmark_image=_env("BENCHMARK_IMAGE", BENCHMARK_IMAGE) or BENCHMARK_IMAGE,
            log_level=_env("LOG_LEVEL", "INFO") or "INFO",
            max_body_bytes=int(_env("MAX_BODY_BYTES", str(1 << 20)) or 1 << 20),
            header_timeout_seconds=float(_env("HEADER_TIMEOUT_SECONDS", "10") or 10),
            token_check_seconds=float(_env("TOKEN_CHECK_SECONDS", "2") or 2),
            gc_freeze=_flag("GC_FREEZE", True),
            compute_workers=int(_env("COMPUTE_WORKERS", "1") or 0),
            operation_budget=int(_env("OPERATION_BUDGET", "10000") or 10000),
            rate_points_per_minute=int(_env("RATE_POINTS_PER_MINUTE", "60000") or 60000),
            rate_burst=int(_env("RATE_BURST", "50000") or 50000),
            tenant_rate_points_per_minute=int(
                _env("TENANT_RATE_POINTS_PER_MINUTE", "180000") or 180000
            ),
            tenant_rate_burst=int(_env("TENANT_RATE_BURST", "150000") or 150000),
            max_response_bytes=int(_env("MAX_RESPONSE_BYTES", str(8 << 20)) or 8 << 20),
            anonymous_introspection=_flag("ANONYMOUS_INTROSPECTION", embedded),
            tenant_heavy_concurrency=int(_env("TENANT_HEAVY_CONCURRENCY", "2") or 2),
            tenant_subscriptions=int(_env("TENANT_SUBSCRIPTIONS", "1000") or 1000),
            reservation_max_hours=float(_env("RESERVATION_MAX_HOURS", "168") or 168),
            reservation_max_lead_days=float(_env("RESERVATION_MAX_LEAD_DAYS", "30") or 30),
            reservation_max_share=float(_env("RESERVATION_MAX_SHARE", "0.5") or 0.5),
            keys_dir=Path(keys_dir) if keys_dir else None,
            keys_pem=_env("KEYS_PEM", "") or "",
            active_key=_env("ACTIVE_KEY"),
        )
        if not 0.1 <= settings.budget_check_seconds <= 3600:
            raise ValueError("BUDCLUSTER_BUDGET_CHECK_SECONDS must be from 0.1 to 3600")
        if not 0.1 <= settings.fleet_balance_seconds <= 3600:
            raise ValueError("BUDCLUSTER_FLEET_BALANCE_SECONDS must be from 0.1 to 3600")
        if not 0.1 <= settings.drain_seconds <= 3600:
            raise ValueError("BUDCLUSTER_DRAIN_SECONDS must be from 0.1 to 3600")
        if not 0.1 <= settings.autoscale_seconds <= 3600:
            raise ValueError("BUDCLUSTER_AUTOSCALE_SECONDS must be from 0.1 to 3600")
        if not 1 <= settings.serving_hold_seconds <= 3600:
            raise ValueError("BUDCLUSTER_SERVING_HOLD_SECONDS must be from 1 to 3600")
        if settings.audit_retention_days < 1:
            raise ValueError("BUDCLUSTER_AUDIT_RETENTION_DAYS must be at least 1")
        if settings.rate_burst < settings.operation_budget:
            raise ValueError("BUDCLUSTER_RATE_BURST must be at least BUDCLUSTER_OPERATION_BUDGET")
        if min(settings.operation_budget, settings.rate_points_per_minute) <= 0:
            raise ValueError("the operation budget and the rate limit must be positive")
        if (
            settings.tenant_rate_burst < settings.rate_burst
            or settings.tenant_rate_points_per_minute < settings.rate_points_per_minute
        ):
            raise ValueError(
                "BUDCLUSTER_TENANT_RATE_BURST and _TENANT_RATE_POINTS_PER_MINUTE must be at "
                "least BUDCLUSTER_RATE_BURST and _RATE_POINTS_PER_MINUTE"
            )
        if settings.max_response_bytes < 64 * 1024:
            raise ValueError("BUDCLUSTER_MAX_RESPONSE_BYTES must be at least 65536")
        if min(settings.tenant_heavy_concurrency, settings.tenant_subscriptions) < 1:
            raise ValueError(
                "BUDCLUSTER_TENANT_HEAVY_CONCURRENCY and _TENANT_SUBSCRIPTIONS must be at least 1"
            )
        if not 0 < settings.reservation_max_share <= 1:
            raise ValueError("BUDCLUSTER_RESERVATION_MAX_SHARE must be more than 0 and at most 1")
        if min(settings.reservation_max_hours, settings.reservation_max_lead_days) <= 0:
            raise ValueError(
                "reservations need a positive BUDCLUSTER_RESERVATION_MAX_HOURS and _LEAD_DAYS"
            )
        return settings


def otlp_traces_url(env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP URL spans are sent to, from the environment, or None (no traces: nothing
    configured, OTEL_SDK_DISABLED, or OTEL_TRACES_EXPORTER=none)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if exporter == "none":
        return None
    if exporter != "otlp":
        raise ValueError("OTEL_TRACES_EXPORTER: budcluster exports traces over otlp, or none")
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    ) or "http/protobuf"
    full = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("BUDCLUSTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or ""
    url = full or (f"{base.strip().rstrip('/')}/v1/traces" if base.strip() else "")
    if not url:
        return None
    if protocol.strip().lower() != "http/protobuf":
        raise ValueError(
            "OTEL_EXPORTER_OTLP_PROTOCOL: budcluster sends OTLP over http/protobuf "
            "(a collector's port 4318)"
        )
    if not url.startswith(("http://", "https://")):
        raise ValueError("the OTLP endpoint must be a URL starting with http:// or https://")
    return url


def _pepper_file(data_dir: Path) -> bytes:
    """The pepper kept in a private file of the data directory, made once."""
    path = data_dir / "token-pepper"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it a moment ago
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32))
    for _ in range(50):
        value = path.read_text().strip()
        if value:
            return value.encode()
        time.sleep(0.02)
    raise RuntimeError(f"{path} is empty")
