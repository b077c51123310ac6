"""The `budcluster` command: serve, worker, migrate, token, cluster, keys, export-schema."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import uvicorn
from sqlalchemy.engine import make_url

from adapters.secrets.keyring import (
    DEFAULT_BITS,
    MIN_BITS,
    KeyringError,
    retire_key,
    write_new_key,
)
from budcluster import bootstrap, logs, migrate
from budcluster.bootstrap import App
from budcluster.collector import FrozenSurvivors
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.errors import DomainError
from domain.model.audit import OK, AuditedOperation, without_secrets
from domain.model.audit import current as audit_context
from domain.model.ids import ProjectId, TenantId, TokenId
from domain.model.principal import TENANT_DEFAULT_SCOPES, Scope

SCHEMA_PATH = Path("frontend-contract/schema.graphql")


def _configure_logging(settings: Settings) -> None:
    logs.configure(settings.log_level, settings.log_format)


async def _prepared(
    settings: Settings,
    *,
    migrate_first: bool,
    factory: Callable[[Settings], Awaitable[App]] = bootstrap.cli,
) -> App:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app = await factory(settings)
    if migrate_first:
        await migrate.upgrade(app.db.engine)
    return app


def _announce(settings: Settings, first_token: str | None) -> None:
    """What a person starting the service needs: the admin token on the first start (this once),
    and on every start where to open GraphiQL and the live schedule."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(settings.host)
    if host is None:
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{host}:{settings.port}"
    token = (
        "  budcluster is ready: first start, so an admin token was created.\n"
        "  It is shown this once and stored only as a hash; keep it now:\n\n"
        f"    {first_token}\n\n"
        if first_token
        else ""
    )
    print(
        f"\n{token}"
        f"  GraphiQL:       {base}/graphql  (add the header\n"
        '                  {"Authorization": "Bearer <token>"})\n'
        f"  Live schedule:  {base}/schedule  (paste the token once)\n",
        flush=True,
    )


async def serve(settings: Settings) -> int:
    from budcluster.http import create_app
    from budcluster.http.persisted import InvalidManifest, PersistedDocuments
    from budcluster.http.server import WebSocketProtocol, listen, protocol

    try:
        PersistedDocuments.load(settings.persisted_documents_file)
    except InvalidManifest as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    try:  # before anything is printed: a port in use must not look like a start
        sock = listen(settings.host, settings.port)
    except OSError as exc:
        print(
            f"budcluster: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    try:
        app = await _prepared(settings, migrate_first=settings.auto_migrate, factory=bootstrap.api)
        runtime = Runtime(app)  # started and stopped by the ASGI app's lifespan
        try:
            issued = None
            if settings.create_defaults:
                issued = await app.ensure_defaults(actor=f"cli:{_user()}")
            _announce(settings, issued.secret if issued is not None else None)
            config = uvicorn.Config(
                create_app(app, runtime=runtime),
                host=settings.host,
                port=settings.port,
                log_level=settings.log_level.lower(),
                log_config=None,
                access_log=settings.access_log,
                http=protocol(settings.header_timeout_seconds),
                ws=WebSocketProtocol,
                ws_max_size=settings.max_body_bytes,
                lifespan="on",
            )
            if settings.gc_freeze:
                FrozenSurvivors().install()
            await uvicorn.Server(config).serve(sockets=[sock])
        finally:
            await runtime.stop()
            await app.close()
    finally:
        sock.close()
    return 0


async def worker(settings: Settings) -> None:
    from workers.settings import run_worker, worker_for

    app = await _prepared(settings, migrate_first=False, factory=bootstrap.worker)
    runtime = Runtime(app)
    await runtime.start()
    if settings.gc_freeze:
        FrozenSurvivors().install()
    server = None
    try:
        if settings.worker_metrics_port:
            from budcluster.http import worker_server

            server = await worker_server.start(
                app, settings.worker_metrics_host, settings.worker_metrics_port
            )
        await run_worker(lambda: worker_for(app), app.clock)
    finally:
        if server is not None:
            await server.cleanup()
        await runtime.stop()
        await app.close()


async def run_migrations(settings: Settings) -> None:
    app = await _prepared(settings, migrate_first=True)
    await app.close()
    print(f"migrated {app.db.engine.url.render_as_string(hide_password=True)} to head")


class CliError(Exception):
    """A refusal of the command line's, printed as `budcluster: <message>` (exit code 2)."""


def _uuid(value: str, option: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise CliError(f"{option} {value!r} is not an id") from None


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> timedelta:
    """`90d`, `12h`, `30m`, `3600s` (or a bare number of seconds)."""
    number, unit = (text[:-1], text[-1]) if text[-1:] in _UNITS else (text, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise CliError(f"--expires-in {text!r} is not a duration such as 90d, 12h or 30m") from None
    if not 0 < seconds <= 10 * 365 * 86400:
        raise CliError("--expires-in must be more than 0 and at most 10 years")
    return timedelta(seconds=seconds)


async def _existing(settings: Settings) -> App:
    """The service's database as it is: token commands never create or migrate one, so one run
    from the wrong directory says so instead of issuing a token nobody's service will know."""
    if settings.is_embedded:
        path = Path(make_url(settings.database_url).database or "")
        if not path.is_file():  # noqa: ASYNC240 (one stat, before anything else runs)
            raise CliError(
                f"no budcluster database at {path}: run this where the service runs, or set "
                "BUDCLUSTER_DATA_DIR (or DATABASE_URL) to the service's"
            )
    app = await bootstrap.cli(settings)
    if not await migrate.is_current(app.db.engine):
        await app.close()
        raise CliError(
            f"the database at {_shown(settings)} holds no budcluster schema at the latest "
            "version: run `budcluster migrate` (or start the service) first"
        )
    return app


def _shown(settings: Settings) -> str:
    return make_url(settings.database_url).render_as_string(hide_password=True)


@contextlib.asynccontextmanager
async def _audited(
    app: App, command: str, given: dict[str, object], tenant: TenantId | None = None
) -> AsyncIterator[AuditedOperation]:
    """A command's audit event: written with its change (or, if it changed nothing, at the
    end), with the machine user who ran it and its outcome."""
    operation = AuditedOperation(
        tenant_id=tenant,
        actor=f"cli:{_user()}",
        token_id=None,
        operation=command,
        input=without_secrets(given),
        source="cli",
        operator=True,  # its event is the tenant's whose objects it acted on
    )
    token = audit_context.set(operation)
    outcome = "ERROR"
    try:
        yield operation
        outcome = OK
    except CliError:
        outcome = "REFUSED"
        raise
    finally:
        audit_context.reset(token)
        await app.audit.finish(operation, outcome)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        return str(os.getuid())


async def create_token(settings: Settings, args: argparse.Namespace) -> None:
    scopes = frozenset(Scope(s) for s in args.scope)
    projects = (
        frozenset(ProjectId(_uuid(p, "--project")) for p in args.project) if args.project else None
    )
    new_tenant = args.tenant is None
    tenant = TenantId(uuid.uuid4()) if new_tenant else TenantId(_uuid(args.tenant, "--tenant"))
    lifetime = _duration(args.expires_in) if args.expires_in else None
    app = await _existing(settings)
    given = {
        "name": args.name,
        "tenant": str(tenant),
        "new_tenant": new_tenant,
        "operator": args.operator,
        "scopes": sorted(s.value for s in scopes),
        "projects": None if projects is None else sorted(map(str, projects)),
        "expires_in": args.expires_in,
    }
    try:
        async with _audited(app, "token create", given, tenant) as audited:
            issued = await app.tokens.issue(
                tenant_id=tenant,
                name=args.name,
                scopes=scopes,
                project_ids=projects,
                operator=args.operator,
                expires_at=app.clock.now() + lifetime if lifetime else None,
            )
            audited.target(issued.token.id)
    finally:
        await app.close()
    token = issued.token
    print(
        f"database: {_shown(settings)}\n"
        f"token id: {token.id}\n"
        f"tenant:   {token.tenant_id}{' (new)' if new_tenant else ''}\n"
        f"kind:     {'operator' if args.operator else 'tenant'}\n"
        f"scopes:   {', '.join(sorted(s.value for s in token.scopes))}\n"
        f"projects: {'all' if projects is None else ', '.join(sorted(map(str, projects)))}\n"
        f"expires:  {token.expires_at.isoformat() if token.expires_at else 'never'}",
        file=sys.stderr,
    )
    print(issued.secret)


async def revoke_token(settings: Settings, args: argparse.Namespace) -> None:
    token_id = TokenId(_uuid(args.token_id, "token id"))
    app = await _existing(settings)
    try:
        async with _audited(app, "token revoke", {"token_id": str(token_id)}) as audited:
            audited.target(token_id)
            await app.tokens.revoke(token_id)
    finally:
        await app.close()
    print(f"revoked {args.token_id} in {_shown(settings)}")


async def create_simulated_cluster(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.simulated.config import parse_node_groups, settings_for

    app = await _prepared(settings, migrate_first=settings.auto_migrate)
    try:
        cluster = await app.clusters.create_simulated(
            args.name,
            settings_for(
                parse_node_groups(args.nodes),
                time_scale=args.time_scale,
                startup_seconds=args.startup_seconds,
            ),
        )
    finally:
        await app.close()
    print(cluster.id)


def generate_key(settings: Settings, args: argparse.Namespace) -> int:
    directory = args.dir or settings.keys_dir
    if directory is None and not settings.keys_pem:
        directory = settings.generated_keys_dir
    if directory is None:
        print("budcluster: pass --dir or set BUDCLUSTER_KEYS_DIR", file=sys.stderr)
        return 2
    try:
        written = write_new_key(directory, bits=args.bits, activate=args.activate)
    except KeyringError as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    state = "active" if written.active else "not active (--activate makes a new key active)"
    print(f"wrote {written.path}, version {written.version}, {state}", file=sys.stderr)
    if written.active and settings.active_key not in (None, written.key_id):
        print("note: BUDCLUSTER_ACTIVE_KEY is set and overrides ACTIVE", file=sys.stderr)
    print(written.key_id)
    return 0


async def rotate_keys(settings: Settings) -> int:
    """Re-wrap every stored kubeconfig to the active key; safe while the service runs."""
    app = await _prepared(settings, migrate_first=False)
    try:
        async with _audited(app, "keys rotate", {}):
            rotation = await app.registry.rewrap_secrets()
    finally:
        await app.close()
    print(
        f"active key {rotation.active_key_id}: {rotation.rewrapped} re-wrapped, "
        f"{rotation.current} already on it, {len(rotation.failed)} failed"
        + (f" ({', '.join(rotation.failed)})" if rotation.failed else ""),
        file=sys.stderr,
    )
    return 1 if rotation.failed else 0


async def retire(settings: Settings, args: argparse.Namespace) -> int:
    """Delete a key no stored secret is wrapped with any more."""
    directory = args.dir or settings.keys_dir or settings.generated_keys_dir
    if directory is None:
        print("budcluster: keys in BUDCLUSTER_KEYS_PEM are retired by editing it", file=sys.stderr)
        return 2
    try:
        retire_key(directory, args.key_id, check_only=True)
    except KeyringError as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    app = await _prepared(settings, migrate_first=False)
    try:
        in_use = await app.registry.key_in_use(args.key_id)
    finally:
        await app.close()
    if in_use:
        print(
            f"budcluster: key {args.key_id} still wraps the kubeconfig of {len(in_use)} "
            f"cluster(s) ({', '.join(in_use[:5])}): run `budcluster keys rotate` first",
            file=sys.stderr,
        )
        return 1
    try:
        path = retire_key(directory, args.key_id)
    except KeyringError as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    print(f"removed {path}", file=sys.stderr)
    return 0


def export_schema(path: Path) -> None:
    from schema.schema import sdl

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sdl())
    print(f"wrote {path}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="budcluster", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the GraphQL API (embedded default with nothing set)")
    sub.add_parser("worker", help="run an arq worker and the cluster watchers")
    sub.add_parser("migrate", help="bring the database to the latest schema")

    token = sub.add_parser("token", help="API tokens").add_subparsers(dest="action", required=True)
    create = token.add_parser(
        "create",
        help="issue a token in the service's existing database; prints it once",
        description="Issue a token for a tenant (--tenant, or --new-tenant). A tenant's token gets "
        f"{', '.join(sorted(s.value for s in TENANT_DEFAULT_SCOPES))} unless --scope says "
        "otherwise; the operator's scopes (clusters:write, admin) need --operator.",
    )
    create.add_argument("--name", required=True)
    whose = create.add_mutually_exclusive_group(required=True)
    whose.add_argument("--tenant", help="the tenant id the token acts for")
    whose.add_argument("--new-tenant", action="store_true", help="make a new tenant for it")
    create.add_argument(
        "--operator",
        action="store_true",
        help="a platform operator's token (clusters, shared queues, priority classes); "
        "default scope admin",
    )
    create.add_argument(
        "--scope",
        action="append",
        default=[],
        choices=[s.value for s in Scope],
        help="repeatable; default: the tenant scopes (admin with --operator)",
    )
    create.add_argument(
        "--project", action="append", default=[], help="limit to these project ids (repeatable)"
    )
    create.add_argument("--expires-in", help="lifetime, e.g. 90d, 12h or 30m (default: none)")
    revoke = token.add_parser("revoke", help="revoke a token; its open connections close")
    revoke.add_argument("token_id")

    cluster = sub.add_parser("cluster", help="clusters").add_subparsers(
        dest="action", required=True
    )
    sim = cluster.add_parser("create-simulated", help="add a simulated cluster")
    sim.add_argument("--name", required=True)
    sim.add_argument("--nodes", default="2x8xnvidia-a100-80gb,1x4xnvidia-tesla-t4")
    sim.add_argument(
        "--time-scale", type=float, default=1.0, help="simulated seconds per real second"
    )
    sim.add_argument("--startup-seconds", type=float, default=2.0)

    keys = sub.add_parser("keys", help="the RSA keys that seal kubeconfigs").add_subparsers(
        dest="action", required=True
    )
    generate = keys.add_parser("generate", help="write a new private key; prints its key id")
    generate.add_argument(
        "--dir", type=Path, help="default BUDCLUSTER_KEYS_DIR, embedded <data dir>/keys"
    )
    generate.add_argument("--activate", action="store_true", help="make it the active key")
    generate.add_argument(
        "--bits", type=int, default=DEFAULT_BITS, help=f"RSA key size, at least {MIN_BITS}"
    )

    keys.add_parser(
        "rotate", help="re-wrap every stored kubeconfig to the active key (safe while serving)"
    )
    retire_cmd = keys.add_parser(
        "retire", help="delete a key once no stored kubeconfig is wrapped with it"
    )
    retire_cmd.add_argument("key_id")
    retire_cmd.add_argument(
        "--dir", type=Path, help="default BUDCLUSTER_KEYS_DIR, embedded <data dir>/keys"
    )

    export = sub.add_parser("export-schema", help="write the GraphQL SDL")
    export.add_argument("--path", type=Path, default=SCHEMA_PATH)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "export-schema":
        export_schema(args.path)
        return 0
    try:
        settings = Settings.from_env()
    except ValueError as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    _configure_logging(settings)
    try:
        if args.command == "serve":
            return asyncio.run(serve(settings))
        if args.command == "worker":
            asyncio.run(worker(settings))
        elif args.command == "migrate":
            asyncio.run(run_migrations(settings))
        elif args.command == "token" and args.action == "create":
            asyncio.run(create_token(settings, args))
        elif args.command == "token" and args.action == "revoke":
            asyncio.run(revoke_token(settings, args))
        elif args.command == "keys" and args.action == "generate":
            return generate_key(settings, args)
        elif args.command == "keys" and args.action == "rotate":
            return asyncio.run(rotate_keys(settings))
        elif args.command == "keys" and args.action == "retire":
            return asyncio.run(retire(settings, args))
        elif args.command == "cluster":
            asyncio.run(create_simulated_cluster(settings, args))
    except DomainError as exc:
        print(f"budcluster: {exc.message}", file=sys.stderr)
        return 1
    except CliError as exc:
        print(f"budcluster: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
