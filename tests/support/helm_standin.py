"""A `helm` executable for the tests, where no helm binary is installed.

It answers the commands pyhelm3 runs (`version`, `show chart`, `upgrade --install`, `list`,
`status`, `uninstall`) as helm does, in the formats pyhelm3 parses, and does the work with a
real Helm engine: charts are loaded, checked against their values.schema.json and rendered by
helm-python-sdk (Helm's Go SDK through its C ABI); the rendered objects are created in the
cluster named by --kubeconfig / --kube-context, and a release is recorded as helm records it, a
Secret sh.helm.release.v1.<name>.v<revision> labelled owner=helm (its body is JSON here, not
helm's gzip). Only directory charts load: any other reference fails as helm fails for a chart
it can't find, unless a directory of charts stands in for the chart repositories
(HELM_STANDIN_CHARTS: a chart named by a repository or an oci:// reference, at a --version, is
<dir>/<name>-<version> there). With HELM_STANDIN_LOG, each command's arguments are appended to
that file as a JSON line. Run as: python helm_standin.py <helm arguments>; `write_helm(dir)`
makes an executable `helm` that does that (with those settings when given).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import tempfile
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

VERSION = "v4.2.3"
WITH_VALUE = {
    "--kubeconfig",
    "--kube-context",
    "--namespace",
    "-n",
    "--timeout",
    "--history-max",
    "--output",
    "-o",
    "--values",
    "-f",
    "--max",
    "--version",
    "--repo",
    "--template",
    "--description",
    "--revision",
}
Json = dict[str, Any]


class HelmFailed(Exception):
    pass


def parse(argv: list[str]) -> tuple[list[str], dict[str, str | bool]]:
    words: list[str] = []
    options: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("-") and word != "-":
            name, has_value, value = word.partition("=")
            if has_value:
                options[name] = value
            elif name in WITH_VALUE:
                options[name] = argv[i + 1]
                i += 1
            else:
                options[name] = True
        else:
            words.append(word)
        i += 1
    return words, options


class Kube:
    """Just enough of a Kubernetes client: JSON over HTTP(S) with the kubeconfig's token."""

    def __init__(self, kubeconfig: str, context: str | None) -> None:
        config = yaml.safe_load(Path(kubeconfig).read_text())
        name = context or config.get("current-context")
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user: Json = next(
            (u["user"] for u in config.get("users", []) if u["name"] == ctx.get("user")), {}
        )
        self.server = cluster["server"].rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.context: ssl.SSLContext | None = None
        if self.server.startswith("https"):
            self.context = ssl.create_default_context()
            if cluster.get("certificate-authority-data"):
                ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
                self.context.load_verify_locations(cadata=ca)
            if user.get("client-certificate-data"):
                with tempfile.TemporaryDirectory() as private:
                    cert, key = Path(private, "c"), Path(private, "k")
                    cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
                    key.write_bytes(base64.b64decode(user["client-key-data"]))
                    self.context.load_cert_chain(cert, key)

    def call(self, method: str, path: str, body: Json | None = None) -> Json | None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server + path, data=data, method=method, headers=self.headers
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise HelmFailed(f"{method} {path}: {exc.code} {exc.read()[:200]!r}") from None
        except urllib.error.URLError as exc:
            raise HelmFailed(
                f"Kubernetes cluster unreachable: dial tcp: connect: network is unreachable"
                f" ({exc.reason})"
            ) from None
        return json.loads(text) if text else {}


def collection(obj: Json, namespace: str) -> str:
    api = obj["apiVersion"]
    base = "/api/v1" if api == "v1" else f"/apis/{api}"
    plural = obj["kind"].lower() + "s"
    return f"{base}/namespaces/{namespace}/{plural}"


def release_secrets(kube: Kube, namespace: str | None) -> list[Json]:
    path = "/api/v1/secrets" if namespace is None else f"/api/v1/namespaces/{namespace}/secrets"
    listed = kube.call("GET", path + "?labelSelector=owner%3Dhelm") or {}
    return [
        s
        for s in listed.get("items") or []
        if (s.get("metadata") or {}).get("labels", {}).get("owner") == "helm"
    ]


def record_of(secret: Json) -> Json:
    record: Json = json.loads(base64.b64decode(secret["data"]["release"]))
    return record


def releases(kube: Kube, namespace: str | None) -> dict[tuple[str, str], Json]:
    latest: dict[tuple[str, str], Json] = {}
    for secret in release_secrets(kube, namespace):
        record = record_of(secret)
        key = (record["namespace"], record["name"])
        if key not in latest or latest[key]["version"] < record["version"]:
            latest[key] = record
    return latest


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def load_chart(ref: str, options: dict[str, str | bool] | None = None) -> Any:
    import helm_python

    if Path(ref).is_dir():
        return helm_python.Chart.load(ref)
    repository = os.environ.get("HELM_STANDIN_CHARTS")
    version = (options or {}).get("--version")
    if repository and isinstance(version, str):
        published = Path(repository, f"{ref.rsplit('/', 1)[-1]}-{version}")
        if published.is_dir():
            return helm_python.Chart.load(str(published))
    raise HelmFailed(f'chart "{ref}" not found in any repository')


def upgrade(words: list[str], options: dict[str, str | bool], kube: Kube) -> Json:
    import helm_python

    name, ref = words[1], words[2]
    namespace = str(options.get("--namespace") or "default")
    values = json.loads(sys.stdin.read() or "{}") if options.get("--values") == "-" else {}
    existing = releases(kube, namespace).get((namespace, name))
    if existing is not None and not options.get("--install"):
        raise HelmFailed(f'"{name}" has no deployed releases')
    chart = load_chart(ref, options)
    if (
        options.get("--create-namespace")
        and kube.call("GET", f"/api/v1/namespaces/{namespace}") is None
    ):
        kube.call(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    revision = 1 if existing is None else existing["version"] + 1
    try:
        rendered = chart.render(
            values,
            name=name,
            namespace=namespace,
            revision=revision,
            is_install=existing is None,
            is_upgrade=existing is not None,
        )
    except helm_python.HelmError as exc:
        raise HelmFailed(str(exc)) from None
    manifests = [
        text for path, text in sorted(rendered.items()) if path.endswith((".yaml", ".yml"))
    ]
    objects = [obj for text in manifests for obj in yaml.safe_load_all(text) if obj]
    for obj in objects:
        obj.setdefault("metadata", {}).setdefault("namespace", namespace)
        path = collection(obj, namespace)
        if kube.call("GET", f"{path}/{obj['metadata']['name']}") is None:
            kube.call("POST", path, obj)
        else:
            kube.call("PUT", f"{path}/{obj['metadata']['name']}", obj)
    record = {
        "name": name,
        "namespace": namespace,
        "version": revision,
        "info": {
            "status": "deployed",
            "first_deployed": existing["info"]["first_deployed"] if existing else now(),
            "last_deployed": now(),
            "description": "Install complete" if existing is None else "Upgrade complete",
        },
        "chart": {"metadata": chart.metadata},
        "config": values,
        "manifest": "---\n".join(manifests),
    }
    secret_name = f"sh.helm.release.v1.{name}.v{revision}"
    kube.call(
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "helm.sh/release.v1",
            "metadata": {
                "name": secret_name,
                "namespace": namespace,
                "labels": {
                    "owner": "helm",
                    "name": name,
                    "status": "deployed",
                    "version": str(revision),
                },
            },
            "data": {"release": base64.b64encode(json.dumps(record).encode()).decode()},
        },
    )
    return record


def uninstall(words: list[str], options: dict[str, str | bool], kube: Kube) -> None:
    name = words[1]
    namespace = str(options.get("--namespace") or "default")
    secrets = [
        s for s in release_secrets(kube, namespace) if s["metadata"]["labels"].get("name") == name
    ]
    if not secrets:
        raise HelmFailed(f"uninstall: Release not loaded: {name}: release: not found")
    latest = max((record_of(s) for s in secrets), key=lambda r: r["version"])
    for obj in (o for o in yaml.safe_load_all(latest["manifest"]) if o):
        kube.call("DELETE", f"{collection(obj, namespace)}/{obj['metadata']['name']}")
    for secret in secrets:
        kube.call("DELETE", f"/api/v1/namespaces/{namespace}/secrets/{secret['metadata']['name']}")
    print(f'release "{name}" uninstalled')


def main(argv: list[str]) -> int:
    words, options = parse(argv)
    if os.environ.get("HELM_STANDIN_LOG"):
        with open(os.environ["HELM_STANDIN_LOG"], "a") as log:
            log.write(json.dumps(argv) + "\n")
    try:
        if words[:1] == ["version"]:
            print(VERSION, end="")
            return 0
        if words[:2] == ["show", "chart"]:
            chart = load_chart(words[2], options)
            print(yaml.safe_dump(chart.metadata, sort_keys=False), end="")
            return 0
        context = options.get("--kube-context")
        kube = Kube(str(options["--kubeconfig"]), str(context) if context else None)
        if words[:1] == ["upgrade"]:
            print(json.dumps(upgrade(words, options, kube)))
        elif words[:1] == ["list"]:
            namespace = (
                None
                if options.get("--all-namespaces")
                else str(options.get("--namespace") or "default")
            )
            print(
                json.dumps(
                    [
                        {
                            "name": r["name"],
                            "namespace": r["namespace"],
                            "revision": str(r["version"]),
                            "updated": r["info"]["last_deployed"],
                            "status": r["info"]["status"],
                            "chart": f"{r['chart']['metadata']['name']}-{r['chart']['metadata']['version']}",
                            "app_version": r["chart"]["metadata"].get("appVersion", ""),
                        }
                        for r in releases(kube, namespace).values()
                    ]
                )
            )
        elif words[:1] == ["status"]:
            namespace = str(options.get("--namespace") or "default")
            found = releases(kube, namespace).get((namespace, words[1]))
            if found is None:
                raise HelmFailed("release: not found")
            print(json.dumps(found))
        elif words[:1] == ["uninstall"]:
            uninstall(words, options, kube)
        else:
            raise HelmFailed(f"unknown command {words[:1]} for the stand-in")
    except HelmFailed as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


def write_helm(directory: Path, *, charts: Path | None = None, log: Path | None = None) -> Path:
    """An executable `helm` in `directory` that runs this stand-in with this Python (`charts`:
    the directory standing in for the chart repositories; `log`: where commands are logged)."""
    directory.mkdir(parents=True, exist_ok=True)
    helm = directory / "helm"
    settings = "".join(
        f"export {name}='{value}'\n"
        for name, value in (("HELM_STANDIN_CHARTS", charts), ("HELM_STANDIN_LOG", log))
        if value is not None
    )
    helm.write_text(f'#!/bin/sh\n{settings}exec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    os.chmod(helm, 0o755)
    return helm


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
