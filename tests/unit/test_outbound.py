"""The outbound rules (domain.model.outbound) and the URLs a job makes budcluster fetch.

Covers: a URL is parsed to one host (legacy numeric IPv4 forms, zone ids, percent-escapes, dot
segments, non-ASCII names, backslashes and credentials refused); every refused class of address,
alone and wrapped in an IPv6 form (mapped, compatible, translated, 6to4, NAT64, Teredo), and
public addresses in the same wrappings allowed; metadata addresses and names refused whatever
the operator allows; the allow-list (ranges, names, `*.` suffixes, bad entries named, read from
BUDCLUSTER_OUTBOUND_ALLOW); a firewall's
view of the refused ranges covers the wrappers whole; a SERVICE job's Helm `spec.repo` and a chart
URL (`spec.chart`, a deployment's `chart`) pass the policy, a private or metadata one refused
naming the field, before anything is stored.
"""

from __future__ import annotations

import uuid
from ipaddress import ip_address, ip_network

import pytest

from budcluster.settings import Settings
from domain.errors import ValidationFailed
from domain.model.ids import ClusterId, ProjectId, TenantId
from domain.model.job import DeploymentType, JobType, Resources
from domain.model.outbound import (
    NOT_REACHABLE,
    AllowList,
    OutboundRules,
    address_refusal,
    judge,
    parse_url,
    unreachable_networks,
)
from domain.model.principal import Principal, Scope
from domain.services.deployments import DeploymentRequest, DeploymentService
from domain.services.jobs import JobService
from domain.services.submission import JobSubmission
from tests.support.fakes import (
    FakeClock,
    FakeOutboundPolicy,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
    install_cluster,
    make_cluster,
)
from tests.unit.test_deployments import Endpoints


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.1/v1", "must write an IPv4 address as four decimal numbers"),
        ("http://2130706433/v1", "must write an IPv4 address as four decimal numbers"),
        ("http://0x7f.0.0.1/v1", "must write an IPv4 address as four decimal numbers"),
        ("http://0177.0.0.1/v1", "must write an IPv4 address as four decimal numbers"),
        ("http://[fe80::1%25eth0]/v1", "must not give an IPv6 zone id"),
        ("http://h%6fst/v1", "must name its host in ASCII letters, digits, '-' and '.' (punycode)"),
        (
            "http://bücher.example/v1",
            "must name its host in ASCII letters, digits, '-' and '.' (punycode)",
        ),
        (
            "http://host/d/%2e%2e/v1",
            "must have a plain path: no percent-escapes, no '.' or '..' segments",
        ),
        (
            "http://host/d/../v1",
            "must have a plain path: no percent-escapes, no '.' or '..' segments",
        ),
        (
            "http://evil.example\\@127.0.0.1/v1",
            "must be a URL of at most 2048 printable characters, no spaces",
        ),
        ("http://user@host/v1", "must not carry credentials"),
        ("ftp://host/v1", "must be a http:// or https:// URL with a host"),
        ("http://host:0/v1", "has port 0"),
        (
            "http://host/v1?",
            "must not have a query or fragment: give the base URL, e.g. http://host/v1",
        ),
    ],
)
def test_a_url_names_one_host_one_way(url: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_url(url)
    assert str(caught.value) == problem


def test_hosts_and_ports_are_read_as_a_client_reads_them() -> None:
    url = parse_url("HTTP://VLLM.Example.:8443/V1/")
    assert (url.scheme, url.host, url.port, url.path) == ("http", "vllm.example", 8443, "/V1")
    mapped = parse_url("https://[::ffff:7f00:1]/v1")
    assert (mapped.host, mapped.port, mapped.origin) == ("::ffff:7f00:1", 443, ("127.0.0.1", 443))
    assert parse_url("oci://registry.example/charts", schemes=("oci",)).port == 443


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.31.0.1", "private"),
        ("192.168.0.1", "private"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("169.254.1.1", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("198.18.0.1", "benchmarking"),
        ("192.0.2.1", "documentation"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "unique-local"),
        ("fd00:ec2::254", "cloud metadata"),
        ("fd20:ce::254", "cloud metadata"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::127.0.0.1", "loopback"),
        ("::ffff:0:10.0.0.1", "private"),
        ("2002:7f00:1::1", "loopback"),
        ("2002:a9fe:a9fe::1", "cloud metadata"),
        ("64:ff9b::10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo, its client 10.0.0.1
    ],
)
def test_every_refused_class_alone_or_wrapped(address: str, why: str) -> None:
    assert address_refusal(ip_address(address)) == why


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::808:808"],
)
def test_public_addresses_pass_in_any_wrapping(address: str) -> None:
    assert address_refusal(ip_address(address)) is None


def test_the_operator_allows_ranges_and_names_but_never_metadata() -> None:
    allow = AllowList.parse(["10.0.0.0/8", " vllm.internal ", "*.svc.example", "0.0.0.0/0", ""])
    rules = OutboundRules(allow)
    assert rules.refusal(ip_address("10.1.2.3")) is None
    assert rules.refusal(ip_address("::ffff:10.1.2.3")) is None
    assert rules.refusal(ip_address("127.0.0.1")) is None  # 0.0.0.0/0: the operator's word
    assert rules.refusal(ip_address("::1")) == "loopback"
    assert rules.refusal(ip_address("169.254.169.254")) == "cloud metadata"
    assert rules.refusal(ip_address("192.168.1.1"), named=True) is None
    assert rules.refusal(ip_address("fd00:ec2::254"), named=True) == "cloud metadata"
    assert allow.admits_host("vllm.internal") and allow.admits_host("a.b.svc.example")
    assert not allow.admits_host("svc.example") and not allow.admits_host("vllm.internal.evil")

    url = parse_url("http://vllm.internal/v1")
    named = judge(url, [ip_address("192.168.1.1")], rules)
    assert named.problem is None and named.operator_allowed
    metadata = judge(
        parse_url("http://metadata.google.internal/v1"), [ip_address("8.8.8.8")], rules
    )
    assert metadata.problem == NOT_REACHABLE
    nothing = judge(url, [], rules)
    assert nothing.problem == NOT_REACHABLE and not nothing.operator_allowed
    for bad in ("10.0.0.0/33", "bad host", "127.1", "*.", "a_b/c"):
        with pytest.raises(ValueError, match="neither a host name nor an address range"):
            AllowList.parse([bad])


def test_a_firewall_leaves_out_the_wrappers_whole() -> None:
    v4, v6 = unreachable_networks(4), unreachable_networks(6)
    for network in ("10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "168.63.129.16/32"):
        assert any(ip_network(network).subnet_of(n) for n in v4), network  # type: ignore[arg-type]
    for network in ("::ffff:0:0/96", "2002::/16", "64:ff9b::/96", "2001::/32", "fc00::/7"):
        assert any(ip_network(network).subnet_of(n) for n in v6), network  # type: ignore[arg-type]
    assert not any(ip_address("8.8.8.8") in n for n in v4)


# --- what a job makes budcluster fetch ---------------------------------------------------------

PRINCIPAL = Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_READ, Scope.JOBS_WRITE}))


class World:
    def __init__(self) -> None:
        self.uow = FakeUnitOfWorkFactory()
        self.clock = FakeClock()
        self.cluster = install_cluster(self.uow.store, make_cluster(ClusterId(uuid.uuid4())))
        self.outbound = FakeOutboundPolicy(hosts={"charts.example.com": ["93.184.216.34"]})
        self.jobs = JobService(
            uow=self.uow, clock=self.clock, tasks=FakeTaskQueue(), outbound=self.outbound
        )

    def helm(self, **spec: object) -> JobSubmission:
        return JobSubmission(
            name="chart",
            project_id=ProjectId(uuid.uuid4()),
            cluster_id=self.cluster.id,
            job_type=JobType.SERVICE,
            deployment_type=DeploymentType.HELM,
            spec={"chart": "llm", **spec},
            resources=Resources(None, 0),
        )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"repo": "http://10.0.0.1:8080/charts"}, "spec.repo"),
        ({"repo": "https://[::ffff:169.254.169.254]/charts"}, "spec.repo"),
        ({"repo": "https://nowhere.example/charts"}, "spec.repo"),
        ({"repo": "file:///etc"}, "spec.repo"),
        ({"chart": "oci://169.254.169.254/charts/llm"}, "spec.chart"),
        ({"chart": "https://127.0.0.1/llm-1.0.0.tgz"}, "spec.chart"),
    ],
)
async def test_a_helm_url_must_be_public(spec: dict[str, str], field: str) -> None:
    world = World()
    with pytest.raises(ValidationFailed) as caught:
        await world.jobs.submit(PRINCIPAL, world.helm(**spec))
    assert [(i.field, i.code) for i in caught.value.issues] == [(field, "FORBIDDEN_ENDPOINT")]
    assert not world.uow.store.jobs


async def test_a_public_chart_repository_passes() -> None:
    world = World()
    repo = "https://charts.example.com/stable"
    try:
        await world.jobs.submit(PRINCIPAL, world.helm(repo=repo, chart="bitnami/nginx"))
    except ValidationFailed as exc:  # whatever else a simulated cluster says of it
        assert "FORBIDDEN_ENDPOINT" not in [i.code for i in exc.issues]
    assert world.outbound.checked == [repo]  # a "repo/name" chart is the operator's own


async def test_a_deployments_chart_url_must_be_public() -> None:
    world = World()
    service = DeploymentService(
        uow=world.uow, clock=world.clock, jobs=world.jobs, endpoints=Endpoints()
    )
    request = DeploymentRequest(
        name="llama",
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=world.cluster.id,
        model="org/llama-8b",
        gpu_type="nvidia-a100-80gb",
        chart="oci://10.0.0.7/charts/vllm",
    )
    with pytest.raises(ValidationFailed) as caught:
        await service.deploy(PRINCIPAL, request)
    assert [(i.field, i.code) for i in caught.value.issues] == [("chart", "FORBIDDEN_ENDPOINT")]
    assert not world.uow.store.deployments


def test_the_operator_sets_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDCLUSTER_OUTBOUND_ALLOW", " 10.0.0.0/8, vllm.internal,,")
    assert Settings.from_env().outbound_allow == ("10.0.0.0/8", "vllm.internal")
    monkeypatch.setenv("BUDCLUSTER_OUTBOUND_ALLOW", "10.0.0.0/8,http://vllm.internal")
    with pytest.raises(ValueError) as caught:
        Settings.from_env()
    assert str(caught.value).startswith("BUDCLUSTER_OUTBOUND_ALLOW: 'http://vllm.internal' is")
