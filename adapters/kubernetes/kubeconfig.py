"""Reading a kubeconfig given as text, and building a kubernetes-asyncio ApiClient from it.

`parse_kubeconfig` checks the YAML without touching the network and keeps only what the chosen
context needs (one cluster, one user). The context is the one asked for, else the kubeconfig's
current-context, else its only context. A kubeconfig comes from a user and runs on our server, so
whatever would make kubernetes-asyncio read a local file (`certificate-authority`,
`client-certificate`, `client-key`, `tokenFile`) or run a program (`exec`, `auth-provider`) is
refused: every credential must be inline.

`build_api_client` hands that to kubernetes-asyncio's KubeConfigLoader. It decodes inline
certificates and keys into files (`FileOrData._create_temp_file_with_content`, `tempfile.mkstemp`
in its `temp_file_path`, mode 0600) because `ssl` loads certificates only from files; the ApiClient
reads them once, when it builds its SSL context. We point `temp_file_path` at the connection's own
private directory, which the connection wipes when it closes. kubernetes-asyncio also remembers
every file it wrote in a module-level dict keyed by the decoded content (so the key material would
stay in memory for the life of the process) and hands the same path out again for the same
content; after loading, our entries are dropped from it, or a later connection with the same
kubeconfig would be given a path in a directory already wiped.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import kube_config
from kubernetes_asyncio.config.config_exception import ConfigException

from adapters.kubernetes.errors import redacted_url
from domain.documents import Flaw, document_problem
from domain.errors import ClusterConnectionError
from domain.ports.cluster_api import KubeconfigSummary

CLEAR_TEXT_CREDENTIALS = ("token", "password", "client-key-data")
LOCAL_FILE_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")
PROGRAM_FIELDS = ("exec", "auth-provider")
MAX_DEPTH = 16
MAX_NODES = 20_000
INLINE_DATA_FIELDS = (
    "certificate-authority-data",
    "client-certificate-data",
    "client-key-data",
)


@dataclass(frozen=True)
class Kubeconfig:
    """A checked kubeconfig reduced to one context. `document` holds credentials: never log it."""

    context: str
    server_url: str
    """The API server as the kubeconfig names it, without user-info: safe to show and store."""
    document: dict[str, Any] = field(repr=False)

    @property
    def summary(self) -> KubeconfigSummary:
        return KubeconfigSummary(context=self.context, server_url=self.server_url)

    @property
    def credentials_in_clear(self) -> str | None:
        """Why connecting would send the user's credentials unencrypted (an http:// server
        and a token, password or client key), or None."""
        if urlsplit(self.server_url).scheme != "http":
            return None
        users = self.document.get("users") or []
        user = users[0].get("user") if users and isinstance(users[0], dict) else None
        held = [k for k in CLEAR_TEXT_CREDENTIALS if isinstance(user, dict) and user.get(k)]
        if not held:
            return None
        return (
            f"the API server is http://, which would send the user's {held[0]} in clear: use "
            "https:// (an operator may allow plain HTTP with BUDCLUSTER_KUBE_PLAIN_HTTP)"
        )


def _invalid(message: str, *, field: str = "kubeconfig") -> ClusterConnectionError:
    return ClusterConnectionError("invalid_kubeconfig", message, field=field)


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: some 20 times faster than the Python one."""


def _load_yaml(text: str) -> dict[str, Any]:
    problem: str | None = None
    try:
        document = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:  # its text quotes the offending line: keep only the position
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = f"the kubeconfig is not valid YAML{where}"
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml >= 0.2.5 stops there
            problem = _FLAWS[Flaw.TOO_DEEP]
    except RecursionError:  # the pure-Python loader, where libyaml is missing
        problem = _FLAWS[Flaw.TOO_DEEP]
    except (ValueError, OverflowError):
        problem = "the kubeconfig is not valid YAML"
    if problem is not None:  # raised outside the handler, so not even __context__ holds the line
        raise _invalid(problem)
    if not isinstance(document, dict):
        raise _invalid("the kubeconfig must be a YAML mapping with clusters, contexts and users")
    _check_shape(document)
    return document


_FLAWS = {
    Flaw.TOO_DEEP: f"the kubeconfig nests deeper than {MAX_DEPTH} levels",
    Flaw.TOO_MANY: f"the kubeconfig holds more than {MAX_NODES} values",
    Flaw.KEY_NOT_TEXT: "every key in the kubeconfig must be text",
    Flaw.SURROGATE: "the kubeconfig holds text that is not valid Unicode",
    Flaw.NUL: "the kubeconfig holds a NUL character",
}


def _check_shape(document: object) -> None:
    """A kubeconfig is a few small mappings: deep nesting, alias bombs (counted as expanded),
    keys that are not text and text that is not plain are refused before anything walks it."""
    problem = document_problem(document, max_depth=MAX_DEPTH, max_values=MAX_NODES, allow_nul=False)
    if problem is not None:
        raise _invalid(_FLAWS[problem.flaw])


def _named(document: dict[str, Any], section: str) -> dict[str, dict[str, Any]]:
    """`document[section]` (a list of {name, <singular>}) as a dict by name."""
    entries = document.get(section) or []
    if not isinstance(entries, list):
        raise _invalid(f"'{section}' in the kubeconfig must be a list")
    singular = section.removesuffix("s")
    named: dict[str, dict[str, Any]] = {}
    for entry in entries:
        body = entry.get(singular) if isinstance(entry, dict) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or not isinstance(body, dict):
            raise _invalid(f"every entry of '{section}' needs a name and a '{singular}' mapping")
        if name in named:
            raise _invalid(f"the kubeconfig has two {section} named {name!r}")
        named[name] = entry
    return named


def _choose_context(document: dict[str, Any], requested: str | None) -> tuple[str, dict[str, Any]]:
    contexts = _named(document, "contexts")
    if not contexts:
        raise _invalid("the kubeconfig has no contexts", field="context")
    known = ", ".join(sorted(contexts))
    if requested:
        if requested not in contexts:
            raise _invalid(
                f"context {requested!r} is not in the kubeconfig (it has: {known})",
                field="context",
            )
        return requested, contexts[requested]
    current = document.get("current-context")
    if isinstance(current, str) and current:
        if current not in contexts:
            raise _invalid(
                f"the kubeconfig's current-context {current!r} is not one of its contexts "
                f"({known})",
                field="context",
            )
        return current, contexts[current]
    if len(contexts) == 1:
        [(name, entry)] = contexts.items()
        return name, entry
    raise _invalid(
        f"the kubeconfig sets no current-context: name one of its contexts ({known})",
        field="context",
    )


def _refuse_local_material(kind: str, name: str, section: dict[str, Any]) -> None:
    for key in LOCAL_FILE_FIELDS:
        if key in section:
            raise _invalid(
                f"{kind} {name!r} reads '{key}' from a file; give the data inline instead "
                f"(e.g. '{key}-data' or 'token')"
            )
    for key in PROGRAM_FIELDS:
        if key in section:
            raise _invalid(
                f"{kind} {name!r} uses '{key}', which would run a program on the server; "
                "use a token or a client certificate instead"
            )
    for key in INLINE_DATA_FIELDS:
        value = section.get(key)
        if value is None:
            continue
        try:
            base64.b64decode("".join(str(value).split()), validate=True)
        except (binascii.Error, ValueError):
            raise _invalid(f"'{key}' of {kind} {name!r} is not base64") from None


def _server_url(cluster_name: str, cluster: dict[str, Any]) -> str:
    server = cluster.get("server")
    if not isinstance(server, str) or not server.strip():
        raise _invalid(f"cluster {cluster_name!r} in the kubeconfig has no server URL")
    try:
        parts = urlsplit(server.strip())
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        raise _invalid(f"the server of cluster {cluster_name!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _invalid(f"the server of cluster {cluster_name!r} is not an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise _invalid(
            f"the server URL of cluster {cluster_name!r} carries a user name or password: "
            "give credentials in the kubeconfig's user (a token or a client certificate)"
        )
    return server.strip()


def parse_kubeconfig(text: str, context: str | None = None) -> Kubeconfig:
    """Check `text` and reduce it to `context`; raises ClusterConnectionError(invalid_kubeconfig)
    with `field` "kubeconfig" or "context"."""
    document = _load_yaml(text)
    context_name, context_entry = _choose_context(document, context)
    wiring = context_entry["context"]
    cluster_name = wiring.get("cluster")
    clusters = _named(document, "clusters")
    if not isinstance(cluster_name, str) or cluster_name not in clusters:
        raise _invalid(f"context {context_name!r} names no cluster of the kubeconfig")
    cluster = clusters[cluster_name]["cluster"]
    server = _server_url(cluster_name, cluster)
    _refuse_local_material("cluster", cluster_name, cluster)

    reduced: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context_name,
        "clusters": [{"name": cluster_name, "cluster": {**cluster, "server": server}}],
        "contexts": [context_entry],
        "users": [],
    }
    user_name = wiring.get("user")
    if user_name is not None:
        users = _named(document, "users")
        if not isinstance(user_name, str) or user_name not in users:
            raise _invalid(f"context {context_name!r} names a user the kubeconfig lacks")
        _refuse_local_material("user", user_name, users[user_name]["user"])
        reduced["users"] = [users[user_name]]
    return Kubeconfig(context=context_name, server_url=redacted_url(server), document=reduced)


def _forget_temp_files(directory: Path) -> None:
    """Drop kubernetes-asyncio's memory of the files it wrote into `directory` (see module doc)."""
    remembered = kube_config._temp_files
    for content, path in list(remembered.items()):
        if Path(path).parent == directory:
            del remembered[content]


async def build_api_client(kubeconfig: Kubeconfig, *, temp_dir: Path) -> ApiClient:
    """An ApiClient for `kubeconfig`, inline certificates decoded into files under `temp_dir`."""
    configuration = Configuration()
    loader = kube_config.KubeConfigLoader(
        config_dict=kubeconfig.document,
        active_context=kubeconfig.context,
        config_base_path=None,
        temp_file_path=str(temp_dir),
    )
    try:
        await loader.load_and_set(configuration)
        return ApiClient(configuration=configuration)
    except (ConfigException, binascii.Error, ValueError) as exc:
        raise _invalid(
            f"the kubeconfig cannot be used ({type(exc).__name__}): check its clusters and users"
        ) from None
    except ssl.SSLError as exc:
        reason = exc.reason if isinstance(exc.reason, str) else type(exc).__name__
        raise _invalid(
            f"the certificates or key inline in the kubeconfig cannot be loaded ({reason})"
        ) from None
    finally:
        _forget_temp_files(temp_dir)
