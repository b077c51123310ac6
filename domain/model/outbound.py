"""Where this service may send a request for a caller: the rules, as pure functions of addresses.

A caller's URL is parsed strictly (`parse_url`): an http(s) URL of a host written one way only (an
ASCII name, a dotted-quad IPv4 or a bracketed IPv6 address; no credentials, percent-escapes or
dot segments), so the host checked is the host a client connects to. Its host's addresses are
then judged (`judge`): every one must be public. An address wrapped in another (IPv4-mapped or
-compatible, 6to4, NAT64, Teredo) is judged by the address it carries, and cloud metadata
addresses and names are refused whatever the operator allows. The operator's `AllowList` (host
names, `*.suffix` names and CIDR ranges) admits private destinations; a tenant has no say. The
same `OutboundRules` decide at submission (through the OutboundPolicy port, which resolves the
name) and again for each address a load generator is about to connect to, so a name that
resolves elsewhere by then is refused too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    collapse_addresses,
    ip_address,
    ip_network,
)
from urllib.parse import urlsplit

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

MAX_URL = 2048
DEFAULT_PORTS = {"http": 80, "https": 443, "oci": 443}
NOT_REACHABLE = (
    "does not resolve to a public address this service may reach (loopback, private, "
    "link-local, multicast, reserved and cloud metadata addresses are refused unless the "
    "operator allows them)"
)
"""What a caller is told of a refused destination, whatever the reason: a name that does not
resolve reads the same as one that resolves to a private address, so that no one learns the
names of a private network by asking."""

METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server (a public address)
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
        "fd20:ce::254",  # GCP over IPv6
    )
)

_REFUSED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ip_network(net), why)
    for net, why in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "reserved"),
        ("100::/64", "reserved"),
        ("2001::/23", "reserved"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "reserved"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_MAPPED = ip_network("::ffff:0:0/96")
_SIXTOFOUR = ip_network("2002::/16")
_COMPATIBLE = ip_network("::/96")
_TRANSLATED = ip_network("::ffff:0:0:0/96")
_NAT64 = ip_network("64:ff9b::/96")
_TEREDO = ip_network("2001::/32")
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def unreachable_networks(version: int) -> list[IPNetwork]:
    """Every range of one IP version a caller's request may not reach, for a firewall that can't
    look inside addresses: the refused ranges, the ranges that carry IPv4 addresses (mapped,
    compatible, translated, 6to4, NAT64, Teredo) whole, and the public metadata addresses."""
    wrappers = (_MAPPED, _COMPATIBLE, _TRANSLATED, _NAT64, _TEREDO, _SIXTOFOUR)
    metadata = [ip_network(a) for a in METADATA_ADDRESSES if a.version == version]
    found = [n for n, _ in _REFUSED] + list(wrappers) + metadata
    if version == 4:
        return list(collapse_addresses(n for n in found if isinstance(n, IPv4Network)))
    return list(collapse_addresses(n for n in found if isinstance(n, IPv6Network)))


def carried(address: IPAddress) -> tuple[IPAddress, ...]:
    """The addresses a packet to `address` may really reach: itself, and the IPv4 address an
    IPv6 address carries (IPv4-mapped, -compatible or -translated, 6to4, NAT64, Teredo's
    server and client)."""
    if isinstance(address, IPv4Address):
        return (address,)
    inner: list[IPAddress] = []
    value = int(address)
    if address.ipv4_mapped is not None:
        inner.append(address.ipv4_mapped)
    elif address.sixtofour is not None:
        inner.append(address.sixtofour)
    elif address in _TEREDO and address.teredo is not None:
        inner.extend(address.teredo)
    elif address in _NAT64 or address in _TRANSLATED or (address in _COMPATIBLE and value > 1):
        inner.append(IPv4Address(value & 0xFFFFFFFF))
    return (address, *inner)


def canonical(address: IPAddress) -> IPAddress:
    """One text per host: an IPv4-mapped IPv6 address is the IPv4 address it maps."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def address_refusal(address: IPAddress) -> str | None:
    """Why no caller's request may go to `address` unless the operator allows it (its class:
    loopback, private...), or None for a public address."""
    found = carried(address)
    if any(each in METADATA_ADDRESSES for each in found):
        return "cloud metadata"
    for each in reversed(found):  # what it carries first: the more telling class
        for network, why in _REFUSED:
            if each.version == network.version and each in network:
                return why
    return None


@dataclass(frozen=True)
class AllowList:
    """What the operator lets callers reach besides public addresses: host names (exact, or
    `*.example.com` for the names under it) and address ranges."""

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """From entries such as "10.0.0.0/8", "192.168.1.7", "vllm.internal", "*.svc.local".
        Raises ValueError naming an entry that is none of these."""
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                networks.append(ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = entry.removeprefix("*.")
            if not _NAME.match(name) or len(name) > 253 or _numeric(name):
                raise ValueError(f"{raw!r} is neither a host name nor an address range")
            if entry.startswith("*."):
                suffixes.append(f".{name}")
            else:
                hosts.add(name)
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks))

    def admits_host(self, host: str) -> bool:
        return host in self.hosts or host.endswith(self.suffixes)

    def admits_address(self, address: IPAddress) -> bool:
        return any(
            each.version == network.version and each in network
            for each in carried(address)
            for network in self.networks
        )


@dataclass(frozen=True)
class OutboundRules:
    """The public-only rule with the operator's exceptions."""

    allow: AllowList = field(default_factory=AllowList)

    def refusal(self, address: IPAddress, *, named: bool = False) -> str | None:
        """Why a request may not go to `address` (None: it may). `named`: the operator allowed
        the host by name, so any of its addresses but a metadata service's."""
        if any(each in METADATA_ADDRESSES for each in carried(address)):
            return "cloud metadata"
        if named or self.allow.admits_address(address):
            return None
        return address_refusal(address)


@dataclass(frozen=True)
class OutboundUrl:
    """A caller's URL, parsed once (see `parse_url`)."""

    text: str
    scheme: str
    host: str
    """Lowercase ASCII without a trailing dot, or an IP address in its canonical text."""
    port: int
    path: str
    """Without its trailing slash ("" for the root)."""
    address: IPAddress | None = None
    """The host, when it is an IP address."""

    @property
    def origin(self) -> tuple[str, int]:
        """Host and port (an IPv4-mapped address as its IPv4 address)."""
        if self.address is None:
            return self.host, self.port
        return str(canonical(self.address)), self.port

    def below(self, base: OutboundUrl) -> bool:
        """Whether this URL's path is `base`'s or below it (its segments first, letter case
        aside); the origins are not compared."""
        path, prefix = self.path.lower(), base.path.lower()
        return path == prefix or path.startswith(f"{prefix}/")


def _numeric(host: str) -> bool:
    """A host of numbers only, which resolvers read as an IPv4 address in some legacy form
    (127.1, 0x7f.0.0.1, 2130706433, 0177.0.0.1)."""
    return all(_NUMERIC_LABEL.match(label) for label in host.split("."))


def parse_url(text: str, *, schemes: tuple[str, ...] = ("http", "https")) -> OutboundUrl:
    """The URL, or ValueError saying what is wrong with it as a destination (in words that
    follow the field's name: "must be ...")."""
    if len(text) > MAX_URL or not text.isprintable() or any(c.isspace() or c == "\\" for c in text):
        raise ValueError(f"must be a URL of at most {MAX_URL} printable characters, no spaces")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError("is not a URL") from None
    if parts.scheme not in schemes or not parts.hostname:
        raise ValueError(f"must be a {' or '.join(f'{s}://' for s in schemes)} URL with a host")
    if "@" in parts.netloc:
        raise ValueError("must not carry credentials")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise ValueError(
            "must not have a query or fragment: give the base URL, e.g. http://host/v1"
        )
    if port == 0:
        raise ValueError("has port 0")
    host = parts.hostname.lower()
    address: IPAddress | None = None
    if parts.netloc.startswith("["):
        if "%" in host:
            raise ValueError("must not give an IPv6 zone id")
        try:
            address = IPv6Address(host)
        except ValueError:
            raise ValueError("has a malformed IPv6 address") from None
        host = str(address)
    else:
        host = host.rstrip(".")
        if not host.isascii() or not _NAME.match(host) or len(host) > 253:
            raise ValueError("must name its host in ASCII letters, digits, '-' and '.' (punycode)")
        if _numeric(host):
            try:
                address = IPv4Address(host)
            except ValueError:
                raise ValueError("must write an IPv4 address as four decimal numbers") from None
    segments = parts.path.split("/")
    if "%" in parts.path or any(s in (".", "..") for s in segments):
        raise ValueError("must have a plain path: no percent-escapes, no '.' or '..' segments")
    return OutboundUrl(
        text=text,
        scheme=parts.scheme,
        host=host,
        port=port or DEFAULT_PORTS[parts.scheme],
        path=parts.path.rstrip("/"),
        address=address,
    )


@dataclass(frozen=True)
class Verdict:
    """Whether a URL's host may be reached, judged on the addresses it resolved to."""

    url: OutboundUrl
    addresses: tuple[IPAddress, ...]
    problem: str | None
    """None when it may be reached; else what the caller is told (always NOT_REACHABLE)."""
    refusals: tuple[str, ...] = ()
    """Why, for the logs: the class of each refused address, or the reason there is none."""
    operator_allowed: bool = False
    """The operator's allow-list admits it (by name, or every address by range)."""


def judge(url: OutboundUrl, addresses: Iterable[IPAddress], rules: OutboundRules) -> Verdict:
    """Whether `url` may be reached when its host resolves to `addresses`: refused when any of
    them is refused, when there is none, or when the host names a metadata service."""
    found = tuple(dict.fromkeys(addresses))
    named = rules.allow.admits_host(url.host)
    refusals: list[str] = []
    if url.host in METADATA_NAMES:
        refusals.append("cloud metadata")
    if not found:
        refusals.append("does not resolve")
    refusals += [why for a in found if (why := rules.refusal(a, named=named)) is not None]
    operator_allowed = named or (bool(found) and all(rules.allow.admits_address(a) for a in found))
    return Verdict(
        url=url,
        addresses=found,
        problem=NOT_REACHABLE if refusals else None,
        refusals=tuple(refusals),
        operator_allowed=operator_allowed and not refusals,
    )
