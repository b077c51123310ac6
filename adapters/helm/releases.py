"""Helm releases on a real cluster through pyhelm3, which runs the `helm` executable.

Each call opens the cluster's sealed kubeconfig in memory, writes it to a file in a private
directory (0700, the file 0600) for the one helm command that needs it, and wipes the directory
when the command ends: decrypted credentials never stay on disk. Values go to helm on its stdin
(pyhelm3 passes `--values -`), never on its command line, which pyhelm3 logs.

Errors: helm missing, the cluster unreachable, or a command cancelled -> GatewayUnavailable
(try again later); a chart that can't be found or rendered, or values its schema refuses ->
ReleaseRejected (the same hand-over would fail the same way).

The charts budcluster ships live beside this module (charts/<name>): bud-service for DOCKER
services, bud-vllm for model deployments; a release naming one of them installs that directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from domain.errors import ClusterConnectionError
from domain.model.ids import ClusterId
from domain.ports.gateways import GatewayUnavailable
from domain.ports.helm import SHIPPED_CHART, ReleaseInfo, ReleaseRejected, ReleaseSpec

log = logging.getLogger(__name__)

CHARTS = Path(__file__).resolve().parent / "charts"
SHIPPED_CHART_PATH = CHARTS / SHIPPED_CHART
OpenKubeconfig = Callable[[ClusterId], Awaitable[tuple[str, str | None]]]
"""The cluster's kubeconfig (opened) and the context to use."""
LISTED_STATES = ("deployed", "failed", "pending-install", "pending-upgrade", "uninstalling")


class PyHelmReleases:
    """HelmReleases of one cluster."""

    def __init__(
        self,
        cluster_id: ClusterId,
        *,
        open_kubeconfig: OpenKubeconfig,
        executable: str = "helm",
        timeout: str = "5m",
    ) -> None:
        self._cluster_id = cluster_id
        self._open_kubeconfig = open_kubeconfig
        self._executable = executable
        self._timeout = timeout

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        try:
            import pyhelm3
        except ImportError:  # pragma: no cover - a dependency of the project
            raise GatewayUnavailable("pyhelm3 is not installed") from None
        if shutil.which(self._executable) is None and not os.access(self._executable, os.X_OK):
            raise GatewayUnavailable(
                f"the helm executable ({self._executable}) is not installed where the worker runs"
            )
        try:
            text, context = await self._open_kubeconfig(self._cluster_id)
        except ClusterConnectionError as exc:
            raise GatewayUnavailable(exc.message) from None
        directory = Path(tempfile.mkdtemp(prefix="budcluster-helm-"))
        try:
            os.chmod(directory, 0o700)
            path = directory / "kubeconfig"
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(text)
            del text
            client = await asyncio.to_thread(  # runs `helm version` once, synchronously
                pyhelm3.Client,
                executable=self._executable,
                kubeconfig=path,
                kubecontext=context,
                default_timeout=self._timeout,
                unpack_directory=str(directory),
            )
            yield client
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    async def install(self, release: ReleaseSpec) -> None:
        async with self._client() as client:
            listed = await self._listed(client, release.namespace)
            if not release.upgrade and any(r.name == release.name for r in listed):
                return  # handed over before: nothing to change
            chart_ref = str(CHARTS / release.chart) if release.shipped else release.chart
            try:
                chart = await client.get_chart(
                    chart_ref, repo=release.repo, version=release.version
                )
                await client.install_or_upgrade_release(
                    release.name,
                    chart,
                    dict(release.values),
                    namespace=release.namespace,
                    create_namespace=release.create_namespace,  # a tenant's is budcluster's
                    wait=False,  # Kueue decides when the pods run; the watch follows them
                )
            except Exception as exc:
                raise _translate(exc, f"installing release {release.name}") from None

    async def uninstall(self, name: str, namespace: str) -> None:
        async with self._client() as client:
            try:
                await client.uninstall_release(name, namespace=namespace)
            except Exception as exc:
                raise _translate(exc, f"uninstalling release {name}") from None

    async def releases(self) -> list[ReleaseInfo]:
        async with self._client() as client:
            return await self._listed(client, None)

    async def _listed(self, client: Any, namespace: str | None) -> list[ReleaseInfo]:
        try:
            found = await client.list_release_definitions(
                all_namespaces=namespace is None,
                namespace=namespace,
                include_failed=True,
                include_pending=True,
                include_uninstalling=True,
            )
        except Exception as exc:
            raise _translate(exc, "listing releases") from None
        return [
            ReleaseInfo(str(r["name"]), str(r["namespace"]), str(r.get("status") or "unknown"))
            for r in found
        ]


def _translate(exc: Exception, action: str) -> Exception:
    """pyhelm3's errors as the port's: a chart problem is for good, the rest may pass."""
    try:
        from pyhelm3 import errors
    except ImportError:  # pragma: no cover
        return GatewayUnavailable(f"{action}: {exc}")
    message = f"{action}: {_first_line(exc)}"
    permanent = (
        errors.ChartNotFoundError,
        errors.FailedToRenderChartError,
        errors.ResourceAlreadyExistsError,
        errors.InvalidResourceError,
    )
    if isinstance(exc, permanent):
        return ReleaseRejected(message)
    if isinstance(exc, errors.Error) and "values don't meet the specifications" in message:
        return ReleaseRejected(message)
    log.warning("helm failed: %s", message)
    return GatewayUnavailable(message)


def _first_line(exc: Exception) -> str:
    """What helm said (pyhelm3's errors carry returncode, stdout, stderr), first line."""
    said = exc.args[2] if len(exc.args) >= 3 else str(exc)
    text = (said.decode(errors="replace") if isinstance(said, bytes) else str(said)).strip()
    lines = [line.removeprefix("Error: ").strip() for line in text.splitlines() if line.strip()]
    return lines[0][:500] if lines else type(exc).__name__


class PyHelmReleaseFactory:
    """One PyHelmReleases per cluster (they hold nothing open between calls)."""

    def __init__(
        self, *, open_kubeconfig: OpenKubeconfig, executable: str = "helm", timeout: str = "5m"
    ) -> None:
        self._open_kubeconfig = open_kubeconfig
        self._executable = executable
        self._timeout = timeout

    def for_cluster(self, cluster_id: ClusterId) -> PyHelmReleases:
        return PyHelmReleases(
            cluster_id,
            open_kubeconfig=self._open_kubeconfig,
            executable=self._executable,
            timeout=self._timeout,
        )
