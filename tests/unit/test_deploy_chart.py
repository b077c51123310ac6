"""Deploying budcluster itself: the chart deploy/helm/budcluster, rendered by a real Helm engine
(helm-python-sdk), and the Dockerfile, parsed (there is no Docker engine here).

Covers: every values file under the chart's ci/ renders, and every object it makes is valid
against the Kubernetes JSON schemas (kubernetes-validate, strict: no unknown field) of the oldest
Kubernetes the chart supports and the newest known (the ServiceMonitor, a CRD, by a check of its
required fields); what each file makes; the migration Job is a pre-install/pre-upgrade hook with
the API's environment, its Secret a hook made before it; the commands are the CLI's; the
environment gives production settings (read back through `Settings.from_env`); the probes; the
non-root, read-only security context with /tmp an emptyDir; secrets only by reference, never a
plain value outside a Secret; replicas; PDBs and the Service select the right pods; the HPA only
when enabled; the Ingress; pods roll when a secret value changes; NOTES' token command; values
the schema refuses; lint. The Dockerfile: python:3.11-slim stages, a non-root user, the
entrypoint a console script of pyproject's, every COPY source in the repository and not ignored,
the packages it copies pyproject's, no writes outside /tmp; the pinned constraints and .venv
satisfy pyproject's dependencies; the helm binary is taken only with its published checksum.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import importlib.util
import io
import json
import re
import shlex
import tarfile
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from budcluster.cli import parser
from budcluster.settings import Settings, otlp_traces_url

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "budcluster"
CI = sorted((CHART / "ci").glob("*.yaml"))
NAME, NAMESPACE = "bc", "budcluster"
FULLNAME = f"{NAME}-budcluster"
SECRET_ENV = {
    "BUDCLUSTER_DATABASE_URL",
    "BUDCLUSTER_REDIS_URL",
    "BUDCLUSTER_TOKEN_PEPPER",
    "BUDCLUSTER_KEYS_PEM",
}
KUBE_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())
"""The chart's kubeVersion floor, and the newest Kubernetes the schemas know."""

Obj = dict[str, Any]


def ci_values(name: str) -> Obj:
    loaded = yaml.safe_load((CHART / "ci" / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def render(values: Obj, *, is_install: bool = True) -> list[Obj]:
    chart = helm_python.Chart.load(CHART)
    out = chart.render(
        values, name=NAME, namespace=NAMESPACE, is_install=is_install, is_upgrade=not is_install
    )
    return [
        doc
        for path, text in sorted(out.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def notes(values: Obj) -> str:
    out = helm_python.Chart.load(CHART).render(values, name=NAME, namespace=NAMESPACE)
    (text,) = (t for path, t in out.items() if path.endswith("NOTES.txt"))
    return text


def by_name(objects: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def pods(objects: list[Obj]) -> dict[str, Obj]:
    """component -> pod template of every workload (the API, the worker, the migration)."""
    found = {}
    for o in objects:
        if o["kind"] in ("Deployment", "Job"):
            template = o["spec"]["template"]
            found[template["metadata"]["labels"]["app.kubernetes.io/component"]] = template
    return found


def containers(objects: list[Obj]) -> Iterator[tuple[str, Obj]]:
    for component, template in pods(objects).items():
        for container in template["spec"]["containers"]:
            yield component, container


def env_of(container: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in container.get("env", [])}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def check_service_monitor(monitor: Obj) -> None:
    """The fields monitoring.coreos.com/v1 requires of a ServiceMonitor or a PodMonitor (not in
    the built-in schemas: CRDs), and those this chart relies on."""
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["kind"] in ("ServiceMonitor", "PodMonitor")
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", monitor["metadata"]["name"])
    spec = monitor["spec"]
    assert isinstance(spec["selector"]["matchLabels"], dict) and spec["selector"]["matchLabels"]
    endpoints = spec["endpoints" if monitor["kind"] == "ServiceMonitor" else "podMetricsEndpoints"]
    assert endpoints, "a monitor without endpoints scrapes nothing"
    for endpoint in endpoints:
        assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "scheme"}
        assert isinstance(endpoint["port"], str) and endpoint["path"].startswith("/")
        for duration in ("interval", "scrapeTimeout"):
            assert re.fullmatch(r"[0-9]+(ms|s|m|h)", endpoint[duration])


# --- every object, every values file ------------------------------------------------------


def test_the_ci_values_files_are_there() -> None:
    assert {p.name for p in CI} >= {
        "default-values.yaml",
        "existing-secrets-values.yaml",
        "minimal-values.yaml",
    }


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_every_rendered_object_is_valid_kubernetes(values_file: str) -> None:
    objects = render(ci_values(values_file))
    assert objects
    for obj in objects:
        assert obj["metadata"]["namespace"] == NAMESPACE
        assert obj["metadata"]["labels"]["app.kubernetes.io/instance"] == NAME
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            check_service_monitor(obj)
            continue
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize(
    ("values_file", "made"),
    [
        (
            "default-values.yaml",
            {
                ("Deployment", f"{FULLNAME}-api"),
                ("Deployment", f"{FULLNAME}-worker"),
                ("Service", FULLNAME),
                ("ServiceAccount", FULLNAME),
                ("Secret", FULLNAME),
                ("Secret", f"{FULLNAME}-migration"),
                ("Job", f"{FULLNAME}-migrate"),
                ("PodDisruptionBudget", f"{FULLNAME}-api"),
                ("PodDisruptionBudget", f"{FULLNAME}-worker"),
            },
        ),
        (
            "existing-secrets-values.yaml",
            {
                ("Deployment", f"{FULLNAME}-api"),
                ("Deployment", f"{FULLNAME}-worker"),
                ("Service", FULLNAME),
                ("Job", f"{FULLNAME}-migrate"),
                ("PodDisruptionBudget", f"{FULLNAME}-api"),
                ("PodDisruptionBudget", f"{FULLNAME}-worker"),
                ("HorizontalPodAutoscaler", f"{FULLNAME}-api"),
                ("Ingress", FULLNAME),
                ("ServiceMonitor", FULLNAME),
                ("PodMonitor", f"{FULLNAME}-worker"),
            },
        ),
        (
            "minimal-values.yaml",
            {
                ("Deployment", f"{FULLNAME}-api"),
                ("Deployment", f"{FULLNAME}-worker"),
                ("Service", FULLNAME),
                ("ServiceAccount", FULLNAME),
                ("Secret", FULLNAME),
                ("Secret", f"{FULLNAME}-migration"),
                ("Job", f"{FULLNAME}-migrate"),
            },
        ),
    ],
)
def test_what_each_values_file_makes(values_file: str, made: set[tuple[str, str]]) -> None:
    objects = render(ci_values(values_file))
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == sorted(made)


# --- the migration hook --------------------------------------------------------------------


@pytest.mark.parametrize("is_install", [True, False])
def test_the_migration_is_a_hook_job_run_before_install_and_upgrade(is_install: bool) -> None:
    objects = render(ci_values("default-values.yaml"), is_install=is_install)
    job = by_name(objects, "Job")[f"{FULLNAME}-migrate"]
    hook = {
        "helm.sh/hook": "pre-install,pre-upgrade",
        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    }
    assert hook.items() <= job["metadata"]["annotations"].items()
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["args"] == ["migrate"]
    # Its Secret is a hook too, made before it (a lower weight) and gone once it succeeded: on
    # install the release's own Secret does not exist yet when hooks run.
    hook_secret = by_name(objects, "Secret")[f"{FULLNAME}-migration"]
    assert hook.items() <= hook_secret["metadata"]["annotations"].items()
    weight = int(hook_secret["metadata"]["annotations"]["helm.sh/hook-weight"])
    assert weight < int(job["metadata"]["annotations"]["helm.sh/hook-weight"])
    assert hook_secret["data"] == by_name(objects, "Secret")[FULLNAME]["data"]
    # Nor does the chart's ServiceAccount: the Job runs without one of the release's.
    assert "serviceAccountName" not in pod and pod["automountServiceAccountToken"] is False
    for name, ref in env_of(container).items():
        if name in SECRET_ENV:
            assert ref["valueFrom"]["secretKeyRef"]["name"] == f"{FULLNAME}-migration"


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_the_migration_runs_with_the_environment_of_the_api(values_file: str) -> None:
    objects = render(ci_values(values_file))
    api, migration = pods(objects)["api"], pods(objects)["migration"]
    (api_container,) = api["spec"]["containers"]
    (job_container,) = migration["spec"]["containers"]

    def normalised(container: Obj) -> list[Obj]:
        text = json.dumps(container["env"]).replace(f'"{FULLNAME}-migration"', f'"{FULLNAME}"')
        return [e for e in json.loads(text) if e["name"] != "BUDCLUSTER_COMPUTE_WORKERS"]

    assert normalised(job_container) == normalised(api_container)
    assert job_container.get("envFrom") == api_container.get("envFrom")
    assert job_container["image"] == api_container["image"]


def test_without_the_migration_hook_nothing_runs_before_install() -> None:
    objects = render({**ci_values("default-values.yaml"), "migration": {"enabled": False}})
    assert "Job" not in {o["kind"] for o in objects}
    assert not any("helm.sh/hook" in o["metadata"].get("annotations", {}) for o in objects)


# --- commands, settings, probes, security ----------------------------------------------------


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_each_container_runs_a_command_of_the_cli(values_file: str) -> None:
    commands = {}
    for component, container in containers(render(ci_values(values_file))):
        assert "command" not in container  # the image's ENTRYPOINT, `budcluster`
        commands[component] = parser().parse_args(container["args"]).command
    assert commands == {"api": "serve", "worker": "worker", "migration": "migrate"}


def test_the_environment_gives_production_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API container's environment, its secrets resolved from the chart's Secret, read by
    the service's own settings."""
    values = ci_values("default-values.yaml")
    objects = render(values)
    secret = {
        key: base64.b64decode(value).decode()
        for key, value in by_name(objects, "Secret")[FULLNAME]["data"].items()
    }
    for name in [*Settings.__dataclass_fields__, "DATABASE_URL", "REDIS_URL"]:
        monkeypatch.delenv(f"BUDCLUSTER_{name.upper()}", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    for component, container in containers(objects):
        for name, entry in env_of(container).items():
            if "value" in entry:
                monkeypatch.setenv(name, entry["value"])
            else:
                ref = entry["valueFrom"]["secretKeyRef"]
                assert ref["name"] in (FULLNAME, f"{FULLNAME}-migration"), component
                monkeypatch.setenv(name, secret[ref["key"]])
        settings = Settings.from_env()
        assert (settings.tasks, settings.events) == ("arq", "redis")
        assert not settings.create_defaults and not settings.auto_migrate
        assert (settings.host, settings.port) == ("0.0.0.0", 8000)
        assert settings.database_url == values["database"]["url"]
        assert settings.redis_url == values["redis"]["url"]
        assert settings.token_pepper == values["tokenPepper"]["value"].encode()
        assert settings.keys_pem == values["keyring"]["keysPem"]
        assert not settings.is_embedded
        assert settings.data_dir == Path("/tmp/budcluster")  # the emptyDir


def test_traces_go_to_the_collector_when_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    values = ci_values("default-values.yaml")
    assert all(
        "OTEL_EXPORTER_OTLP_ENDPOINT" not in env_of(c) for _, c in containers(render(values))
    )
    values["tracing"] = {
        "otlpEndpoint": "http://otel-collector.observability:4318",
        "sampler": "parentbased_traceidratio",
        "samplerArg": 0.25,
    }
    for component, container in containers(render(values)):
        env = {name: str(e["value"]) for name, e in env_of(container).items() if "value" in e}
        assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio", component
        assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.25"
        assert otlp_traces_url(env) == "http://otel-collector.observability:4318/v1/traces"


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_the_api_is_probed_on_health_and_ready(values_file: str) -> None:
    values = ci_values(values_file)
    (api,) = pods(render(values))["api"]["spec"]["containers"]
    assert api["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert api["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert api["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "http"}
    startup = values.get("api", {}).get("startupProbe", {}).get("enabled", True)
    if startup:
        assert api["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    else:
        assert "startupProbe" not in api
    # Readiness fails fast (out of the Service), liveness gives the process time.
    assert (
        api["livenessProbe"]["periodSeconds"] * api["livenessProbe"]["failureThreshold"]
        >= api["readinessProbe"]["periodSeconds"] * api["readinessProbe"]["failureThreshold"]
    )


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_every_pod_runs_non_root_on_a_read_only_root_with_tmp_an_empty_dir(
    values_file: str,
) -> None:
    for component, template in pods(render(ci_values(values_file))).items():
        pod = template["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, component
        assert pod["securityContext"]["runAsUser"] == 10001
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        (tmp,) = (v for v in pod["volumes"] if v["name"] == "tmp")
        assert "emptyDir" in tmp
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, component
            assert context["allowPrivilegeEscalation"] is False
            assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            assert container["resources"]["requests"] and container["resources"]["limits"]


def test_the_default_resources_are_the_container_specification() -> None:
    (api,) = pods(render(ci_values("default-values.yaml")))["api"]["spec"]["containers"]
    assert api["resources"] == {
        "requests": {"cpu": "200m", "memory": "512Mi"},
        "limits": {"cpu": "1000m", "memory": "2Gi"},
    }


# --- secrets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_secrets_are_only_referenced_never_plain_values(values_file: str) -> None:
    values = ci_values(values_file)
    objects = render(values)
    assert "ConfigMap" not in {o["kind"] for o in objects}
    for component, container in containers(objects):
        env = env_of(container)
        assert set(env) >= SECRET_ENV, component
        for name in SECRET_ENV:
            assert set(env[name]) == {"name", "valueFrom"}, (component, name)
            assert set(env[name]["valueFrom"]) == {"secretKeyRef"}
    # No secret value appears anywhere but in the data of a Secret (base64).
    given = [
        values["database"].get("url"),
        values["redis"].get("url"),
        values["tokenPepper"].get("value"),
        values["keyring"].get("keysPem"),
    ]
    outside_secrets = json.dumps([o for o in objects if o["kind"] != "Secret"])
    for secret_value in filter(None, given):
        assert secret_value not in outside_secrets
        assert secret_value.strip().splitlines()[-1] not in outside_secrets


def test_existing_secrets_are_referenced_by_their_names_and_keys() -> None:
    objects = render(ci_values("existing-secrets-values.yaml"))
    assert "Secret" not in {o["kind"] for o in objects}
    for component, container in containers(objects):
        refs = {
            name: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
            for name, e in env_of(container).items()
            if "valueFrom" in e
        }
        assert refs == {
            "BUDCLUSTER_DATABASE_URL": ("budcluster-database", "url"),
            "BUDCLUSTER_REDIS_URL": ("budcluster-redis", "redis-url"),
            "BUDCLUSTER_TOKEN_PEPPER": ("budcluster-secrets", "token-pepper"),
            "BUDCLUSTER_KEYS_PEM": ("budcluster-secrets", "keys-pem"),
            "BUDCLUSTER_ACTIVE_KEY": ("budcluster-secrets", "active-key"),
        }, component
        active = env_of(container)["BUDCLUSTER_ACTIVE_KEY"]["valueFrom"]["secretKeyRef"]
        assert active["optional"] is True  # one key needs no active key id


def test_the_active_key_id_is_a_plain_value_for_it_is_no_secret() -> None:
    for _, container in containers(render(ci_values("minimal-values.yaml"))):
        assert env_of(container)["BUDCLUSTER_ACTIVE_KEY"] == {
            "name": "BUDCLUSTER_ACTIVE_KEY",
            "value": "0123456789abcdef",
        }


def test_pods_roll_when_a_secret_value_changes() -> None:
    values = ci_values("default-values.yaml")

    def checksums(v: Obj) -> dict[str, str]:
        return {
            c: t["metadata"]["annotations"]["checksum/secret"]
            for c, t in pods(render(v)).items()
            if c != "migration"
        }

    before = checksums(values)
    assert set(before) == {"api", "worker"}
    assert checksums(values) == before
    rotated = {**values, "tokenPepper": {"value": "f" * 64}}
    after = checksums(rotated)
    assert all(after[c] != before[c] for c in before)


# --- replicas, selectors, scaling ------------------------------------------------------------


@pytest.mark.parametrize(
    ("values_file", "api", "worker"),
    [("default-values.yaml", 2, 2), ("minimal-values.yaml", 1, 1)],
)
def test_replicas_are_what_the_values_say(values_file: str, api: int, worker: int) -> None:
    deployments = by_name(render(ci_values(values_file)), "Deployment")
    assert deployments[f"{FULLNAME}-api"]["spec"]["replicas"] == api
    assert deployments[f"{FULLNAME}-worker"]["spec"]["replicas"] == worker


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_each_selector_picks_its_own_pods_only(values_file: str) -> None:
    objects = render(ci_values(values_file))
    labels = {c: t["metadata"]["labels"] for c, t in pods(objects).items()}
    for deployment in by_name(objects, "Deployment").values():
        component = deployment["metadata"]["labels"]["app.kubernetes.io/component"]
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert [c for c in labels if selects(selector, labels[c])] == [component]
    for pdb in by_name(objects, "PodDisruptionBudget").values():
        component = pdb["metadata"]["labels"]["app.kubernetes.io/component"]
        selector = pdb["spec"]["selector"]["matchLabels"]
        assert [c for c in labels if selects(selector, labels[c])] == [component]
        deployment = by_name(objects, "Deployment")[f"{FULLNAME}-{component}"]
        assert selector == deployment["spec"]["selector"]["matchLabels"]
    service = by_name(objects, "Service")[FULLNAME]
    assert [c for c in labels if selects(service["spec"]["selector"], labels[c])] == ["api"]


def test_the_service_serves_the_api_port_as_http_without_affinity() -> None:
    service = by_name(render(ci_values("default-values.yaml")), "Service")[FULLNAME]
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["sessionAffinity"] == "None"
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    ]


def test_disruption_budgets_leave_room_to_drain_a_node() -> None:
    objects = render(ci_values("default-values.yaml"))
    for pdb in by_name(objects, "PodDisruptionBudget").values():
        assert pdb["spec"] == {**pdb["spec"], "maxUnavailable": 1}
        assert "minAvailable" not in pdb["spec"]
    existing = by_name(render(ci_values("existing-secrets-values.yaml")), "PodDisruptionBudget")
    assert existing[f"{FULLNAME}-api"]["spec"]["minAvailable"] == 2
    assert "maxUnavailable" not in existing[f"{FULLNAME}-api"]["spec"]


def test_the_api_is_autoscaled_only_when_enabled() -> None:
    plain = render(ci_values("default-values.yaml"))
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in plain}
    objects = render(ci_values("existing-secrets-values.yaml"))
    (hpa,) = by_name(objects, "HorizontalPodAutoscaler").values()
    api = by_name(objects, "Deployment")[f"{FULLNAME}-api"]
    assert "replicas" not in api["spec"]  # the autoscaler's to set
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": api["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 8)
    targets = {
        m["resource"]["name"]: m["resource"]["target"]["averageUtilization"]
        for m in hpa["spec"]["metrics"]
    }
    assert targets == {"cpu": 70, "memory": 80}
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 300


# --- ingress, metrics, notes ------------------------------------------------------------------


def test_the_ingress_routes_to_the_service_and_lets_websockets_live() -> None:
    objects = render(ci_values("existing-secrets-values.yaml"))
    ingress = by_name(objects, "Ingress")[FULLNAME]
    annotations = ingress["metadata"]["annotations"]
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert annotations["cert-manager.io/cluster-issuer"] == "letsencrypt"  # merged with ours
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "budcluster.example.com"
    assert rule["http"]["paths"] == [
        {
            "path": "/",
            "pathType": "Prefix",
            "backend": {"service": {"name": FULLNAME, "port": {"name": "http"}}},
        }
    ]
    assert ingress["spec"]["tls"] == [
        {"secretName": "budcluster-tls", "hosts": ["budcluster.example.com"]}
    ]


def test_the_service_monitor_scrapes_metrics_on_the_http_port_of_the_api_service() -> None:
    objects = render(ci_values("existing-secrets-values.yaml"))
    (monitor,) = by_name(objects, "ServiceMonitor").values()
    service = by_name(objects, "Service")[FULLNAME]
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("http", "/metrics")
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert monitor["metadata"]["labels"]["release"] == "prometheus"


def test_workers_serve_metrics_and_probes_on_their_own_port() -> None:
    """A worker's small HTTP server (BUDCLUSTER_WORKER_METRICS_PORT): probed on /health and
    /ready, scraped by a PodMonitor that selects the worker pods only."""
    objects = render(ci_values("existing-secrets-values.yaml"))
    worker = by_name(objects, "Deployment")[f"{FULLNAME}-worker"]
    template = worker["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]
    assert env_of(container)["BUDCLUSTER_WORKER_METRICS_PORT"]["value"] == "9100"
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "metrics"}
    (monitor,) = by_name(objects, "PodMonitor").values()
    labels = template["metadata"]["labels"]
    assert selects(monitor["spec"]["selector"]["matchLabels"], labels)
    api = by_name(objects, "Deployment")[f"{FULLNAME}-api"]["spec"]["template"]["metadata"]
    assert not selects(monitor["spec"]["selector"]["matchLabels"], api["labels"])
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("metrics", "/metrics")


def test_the_notes_tell_how_to_get_the_first_operator_token() -> None:
    text = notes(ci_values("default-values.yaml"))
    line = text[text.index("kubectl -n budcluster exec") :].split("\n\n")[0]
    words = shlex.split(line.replace("\\\n", " "))
    assert words[:6] == ["kubectl", "-n", NAMESPACE, "exec", f"deploy/{FULLNAME}-api", "--"]
    assert words[6] == "budcluster"
    args = parser().parse_args(words[7:])
    assert (args.command, args.action, args.operator, args.new_tenant) == (
        "token",
        "create",
        True,
        True,
    )


# --- values the schema refuses ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"api": {"replicas": -1}}, "replicas"),
        ({"api": {"replicas": 0}}, "replicas"),
        ({"worker": {"replicas": -1}}, "replicas"),
        ({"database": {"url": ""}}, "database"),
        ({"database": {"url": "mysql://root@db/budcluster"}}, "url"),
        ({"redis": {"url": ""}}, "redis"),
        ({"redis": {"url": "http://redis:6379"}}, "url"),
        ({"tokenPepper": {"value": "short"}}, "value"),
        ({"tokenPepper": {"value": ""}}, "tokenPepper"),
        ({"keyring": {"keysPem": ""}}, "keyring"),
        ({"keyring": {"activeKey": "not-a-key-id"}}, "activeKey"),
        ({"settings": {"BUDCLUSTER_TASKS": "inprocess"}}, "BUDCLUSTER_TASKS"),
        ({"settings": {"TOKEN_PEPPER": "x"}}, "TOKEN_PEPPER"),
        ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
        ({"ingress": {"enabled": True, "hosts": []}}, "hosts"),
        ({"api": {"autoscaling": {"targetCPUUtilizationPercentage": 0}}}, "targetCPU"),
        ({"api": {"podDisruptionBudget": {"maxUnavailable": "half"}}}, "maxUnavailable"),
        ({"serviceMonitor": {"interval": "often"}}, "interval"),
        ({"api": {"replica": 3}}, "replica"),
    ],
)
def test_the_schema_refuses_values_the_service_would_not_run_with(change: Obj, field: str) -> None:
    with pytest.raises(helm_python.HelmValuesError, match=field):
        render(merged(ci_values("default-values.yaml"), change))


def test_a_release_without_any_database_is_refused() -> None:
    values = ci_values("default-values.yaml")
    del values["database"]
    with pytest.raises(helm_python.HelmValuesError, match="database"):
        render(values)


def merged(base: Obj, change: Obj) -> Obj:
    out = dict(base)
    for key, value in change.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and key in out else value
    return out


@pytest.mark.parametrize("values_file", [p.name for p in CI])
def test_the_chart_lints_clean(values_file: str) -> None:
    report = helm_python.lint(CHART, values=ci_values(values_file), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


# --- the Dockerfile ---------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of each instruction, continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        words = (pending + line).split(None, 1)
        pending = ""
        instructions.append((words[0].upper(), words[1] if len(words) > 1 else ""))
    assert not pending, "the Dockerfile ends in a continuation"
    return instructions


def stages() -> list[tuple[str, str | None, list[tuple[str, str]]]]:
    """(base image, stage name, instructions) of each stage."""
    found: list[tuple[str, str | None, list[tuple[str, str]]]] = []
    for instruction, args in dockerfile():
        if instruction == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            found.append((words[0], name, []))
        else:
            assert found, f"{instruction} before FROM"
            found[-1][2].append((instruction, args))
    return found


def env_instructions(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env = {}
    for instruction, args in instructions:
        if instruction == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def pyproject() -> Obj:
    loaded = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_every_stage_is_python_3_11_slim_and_the_last_one_is_the_image() -> None:
    found = stages()
    assert len(found) >= 2, "a builder stage and the image"
    assert all(image == "python:3.11-slim" for image, _, _ in found)
    assert found[-1][1] is None or found[-1][1] not in {n for _, n, _ in found[:-1]}


def test_the_image_runs_as_a_fixed_non_root_user() -> None:
    _, _, final = stages()[-1]
    users = [args for instruction, args in final if instruction == "USER"]
    assert users, "the final stage must name its USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) >= 10000, "numeric, so runAsNonRoot can verify it"
    assert gid.isdigit() and int(gid) >= 10000
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)
    assert values["podSecurityContext"]["runAsGroup"] == int(gid)


def test_the_entrypoint_is_the_projects_console_script_serving_by_default() -> None:
    _, _, final = stages()[-1]
    entrypoint = [json.loads(a) for i, a in final if i == "ENTRYPOINT"][-1]
    cmd = [json.loads(a) for i, a in final if i == "CMD"][-1]
    scripts = pyproject()["project"]["scripts"]
    assert entrypoint[0] in scripts and scripts[entrypoint[0]] == "budcluster.cli:main"
    assert parser().parse_args([*entrypoint[1:], *cmd]).command == "serve"
    assert ("EXPOSE", "8000") in final


def test_the_image_writes_only_under_tmp() -> None:
    _, _, final = stages()[-1]
    env = env_instructions(final)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp"
    assert env["BUDCLUSTER_DATA_DIR"].startswith("/tmp/")
    assert env["PATH"].startswith("/opt/budcluster/bin:")
    builder = " ".join(a for _, _, s in stages()[:-1] for i, a in s if i == "RUN")
    assert "compileall" in builder, "bytecode is compiled at build time"


def test_every_copy_source_is_in_the_repository_and_not_ignored() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    names = [name for _, name, _ in stages()]
    copied: set[str] = set()
    for index, (_, _, instructions) in enumerate(stages()):
        for instruction, args in instructions:
            if instruction not in ("COPY", "ADD"):
                continue
            assert instruction == "COPY", "ADD fetches and unpacks: COPY only"
            words = args.split()
            flags = [w for w in words if w.startswith("--")]
            sources = [w for w in words if not w.startswith("--")][:-1]
            from_stage = [f.split("=", 1)[1] for f in flags if f.startswith("--from=")]
            if from_stage:
                assert from_stage[0] in names[:index], f"{args}: no earlier stage of that name"
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                assert not dockerignored(source, ignored), f"COPY {source}: in .dockerignore"
                copied.add(source)
    # The packages the wheel is made of: each of pyproject's package roots is copied.
    roots = {
        p.rstrip("*") for p in pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    assert roots <= copied
    assert {"pyproject.toml", "README.md"} <= copied  # the build reads the readme


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore excludes `path` or a folder above it (no `!` exceptions used)."""
    assert not any(p.startswith("!") for p in patterns)
    parts = Path(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        for candidate in prefixes:
            if fnmatch.fnmatchcase(candidate, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(candidate, pattern[3:])
            ):
                return True
    return False


def test_the_build_context_leaves_out_what_is_private_heavy_or_generated() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for path in (
        ".git",
        ".venv",
        "web/node_modules",
        "test-artifacts",
        "tests",
        ".budcluster",
        "budcluster/__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".test-services",
    ):
        assert dockerignored(path, ignored), path
    for path in ("budcluster/cli.py", "migrations/versions", "deploy/constraints.txt"):
        assert not dockerignored(path, ignored), path


# --- the image's dependencies ----------------------------------------------------------------


LINUX = {
    **{key: str(value) for key, value in default_environment().items()},
    "sys_platform": "linux",
    "platform_system": "Linux",
}
"""Where the image runs: markers are evaluated for Linux (and this interpreter, 3.11)."""


def requirements() -> list[Requirement]:
    """pyproject's [project.dependencies] that apply on the image (Linux, CPython 3.11)."""
    environment = {**LINUX, "extra": ""}
    return [
        r
        for r in map(Requirement, pyproject()["project"]["dependencies"])
        if r.marker is None or r.marker.evaluate(environment)
    ]


def test_the_pinned_constraints_satisfy_every_dependency_of_pyproject() -> None:
    pins: dict[str, str] = {}
    for line in (ROOT / "deploy" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and re.fullmatch(r"[A-Za-z0-9._-]+", name), line
            pins[canonicalize_name(name)] = version
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned: run deploy/pin_requirements.py"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} does not satisfy {requirement}"
        )
        for extra in requirement.extras:  # e.g. uvicorn[standard]: uvloop, httptools...
            for sub in metadata.requires(name) or []:
                dependency = Requirement(sub)
                if dependency.marker is not None and dependency.marker.evaluate(
                    {**LINUX, "extra": extra}
                ):
                    assert canonicalize_name(dependency.name) in pins, f"{dependency} ({name})"


def test_the_development_environment_satisfies_every_dependency_of_pyproject() -> None:
    """A resolvable set of the image's dependencies exists: the one the tests run on."""
    for requirement in requirements():
        installed = metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{requirement.name} {installed} does not satisfy {requirement}"
        )


# --- the helm binary the workers need -------------------------------------------------------


def fetch_helm_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fetch_helm", ROOT / "deploy" / "docker" / "fetch_helm.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("published_right", [True, False])
def test_the_helm_binary_is_taken_only_with_its_published_checksum(
    published_right: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dockerfile's `helm` stage, against a stand-in download (no network in tests)."""
    binary = tmp_path / "helm"
    binary.write_bytes(b"#!/bin/sh\necho helm\n")
    archive = tmp_path / "helm.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(binary, arcname="linux-arm64/helm")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    published = digest if published_right else "0" * 64
    asked: list[str] = []

    def urlretrieve(url: str) -> tuple[str, None]:
        asked.append(url)
        return str(archive), None

    def urlopen(url: str) -> io.BytesIO:
        asked.append(url)
        return io.BytesIO(f"{published}  helm-v3.17.3-linux-arm64.tar.gz\n".encode())

    module = fetch_helm_module()
    monkeypatch.setattr(module.urllib.request, "urlretrieve", urlretrieve)
    monkeypatch.setattr(module.urllib.request, "urlopen", urlopen)
    out = tmp_path / "bin"
    out.mkdir()
    if published_right:
        module.main("v3.17.3", "arm64", str(out))
        assert (out / "helm").read_bytes() == binary.read_bytes()
        assert (out / "helm").stat().st_mode & 0o777 == 0o755
    else:
        with pytest.raises(SystemExit, match="sha256"):
            module.main("v3.17.3", "arm64", str(out))
        assert not (out / "helm").exists()
    assert asked == [
        "https://get.helm.sh/helm-v3.17.3-linux-arm64.tar.gz",
        "https://get.helm.sh/helm-v3.17.3-linux-arm64.tar.gz.sha256sum",
    ]
    stage = next(s for _, name, s in stages() if name == "helm")
    assert any(i == "RUN" and "fetch_helm.py" in a for i, a in stage)
