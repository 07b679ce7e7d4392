"""Which cluster to read and how: kubeconfig and in-cluster configuration, like kubectl.

Resolution follows kubectl:

* `--kubeconfig FILE` wins; else `KUBECONFIG` (paths joined by `:`; files
  that do not exist are skipped; the first file to define a cluster, user or
  context wins, and so does the first file to set `current-context`); else
  `~/.kube/config`.
* With no kubeconfig file at all and `KUBERNETES_SERVICE_HOST` set (a pod),
  the pod's service account is used ("in-cluster"; the context is named
  `in-cluster`).
* `--context NAME` picks a context (repeatable: a fleet), else the current one.

Every kubeconfig file is read here, once, through the project's bounded YAML
loader (`auditor.parsing.yaml_docs`: alias-bomb, node-count and size limits,
duplicate keys refused), and the kubernetes client is handed the parsed
result: it never parses a kubeconfig itself. Credentials (tokens, client
keys, auth providers) are loaded by the client's own `KubeConfigLoader` and
never leave the `Configuration`, except exec plugins, which run under our
own bounded runner (`exec_plugin.py`: a time limit, `--exec-timeout`, and a
run that stops when the plugin fails). No message here quotes a user entry.

Everything a kubeconfig says that ends up in a message or a report (context
names, the server URL) is cleaned first (`safe_text`): control characters are
spelled out and a URL's userinfo (`https://user:password@host`) is dropped,
from the reported server and from the client's configuration alike.

Every target carries a *fingerprint*: the first 12 hex digits of the SHA-256
of the cluster's CA certificate data (`certificate-authority-data`), or of the
server URL (without userinfo) when the CA is only named by a file path (a
kubeconfig `certificate-authority:` entry, the in-cluster service account) or
absent. It is stable across kubeconfig renames, so the target guard can check
that a context really points at the cluster one means (`--expect-cluster`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import importlib
import os
from dataclasses import dataclass, field
from typing import Any

from auditor.errors import ClusterError
from auditor.model import ClusterInfo
from auditor.parsing.yaml_docs import YAMLInputError, iter_documents
from auditor.sources.live import exec_plugin
from auditor.sources.live.safe_text import clean, printable, redact_url

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IN_CLUSTER_CONTEXT = "in-cluster"
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")
USER_AGENT_PREFIX = "cilium-exposure-auditor"
# Bounds of a kubeconfig file (docs/live.md, "Limits"). A kubeconfig of a
# hundred contexts with embedded certificates is well under a megabyte.
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024
MAX_KUBECONFIG_NODES = 200_000
MAX_KUBECONFIG_ALIAS_EXPANSION = 10_000
DEFAULT_EXEC_TIMEOUT = 60.0


def fingerprint(ca_data: bytes | None, server: str) -> str:
    """First 12 hex digits of sha256(CA data), or of the server URL without CA data."""
    material = ca_data if ca_data else server.rstrip("/").encode()
    return hashlib.sha256(material).hexdigest()[:12]


def _kubernetes(module: str) -> Any:
    """A module of the `kubernetes` client, imported on use (start-up never pays for it) and
    typed `Any`: the client's loaders carry no annotations."""
    return importlib.import_module(f"kubernetes.{module}")


def _error(message: str) -> ClusterError:
    """A `ClusterError` whose text is safe to print (see `safe_text.clean`)."""
    return ClusterError(clean(message))


@dataclass
class Target:
    """One cluster to read: where it is, what it is, and a client configuration for it.

    `context` and `server` are printable and carry no userinfo: they are
    what every message and report shows.
    """

    context: str
    server: str
    fingerprint: str
    configuration: Any = field(repr=False)  # kubernetes.client.Configuration (holds the credentials)
    origin: str = ""  # the kubeconfig file(s), or "in-cluster service account"
    label: str | None = None

    @property
    def name(self) -> str:
        """How reports name the cluster: its posture label, else its context."""
        return self.label or self.context

    def cluster_info(self, version: str | None = None) -> ClusterInfo:
        return ClusterInfo(context=self.context, server=self.server, version=version,
                           fingerprint=self.fingerprint, label=self.label)


# --- kubeconfig files ---------------------------------------------------------------


@dataclass
class Entry:
    """One named cluster, user or context, and the file that defined it
    (relative paths in it are resolved against that file's folder)."""

    body: dict[str, Any]
    path: str
    raw: dict[str, Any]  # the whole list entry (`{name: ..., cluster: {...}}`)


@dataclass
class Kubeconfig:
    """The kubeconfig files merged as kubectl merges them: clusters, contexts, users, the current context."""

    paths: list[str]
    clusters: dict[str, Entry]
    contexts: dict[str, Entry]
    users: dict[str, Entry]
    current_context: str | None
    context_order: list[str]

    @property
    def where(self) -> str:
        return ", ".join(self.paths)


def kubeconfig_paths(explicit: str | None, environ: dict[str, str] | None = None) -> tuple[list[str], bool]:
    """The kubeconfig files to read, and whether they must exist (only `--kubeconfig` must).

    As with kubectl, files of KUBECONFIG that do not exist are skipped; when
    none exists there is no kubeconfig (and a pod falls back to in-cluster).
    """
    env_source = os.environ if environ is None else environ
    if explicit:
        return [explicit], True
    env = env_source.get("KUBECONFIG", "")
    if env:
        return [p for p in env.split(os.pathsep) if p], False
    return [os.path.expanduser(DEFAULT_KUBECONFIG)], False


def _named_entries(document: dict[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    entries = document.get(key) or []
    if not isinstance(entries, list):
        raise _error(f"kubeconfig {path}: {key} must be a list")
    out = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _error(f"kubeconfig {path}: {key}[{index}] has no name")
        body = entry.get(key[:-1])  # clusters[].cluster, contexts[].context, users[].user
        if not isinstance(body, dict):
            raise _error(f"kubeconfig {path}: {key}[{index}] ({entry['name']}) has no {key[:-1]} mapping")
        out.append((entry["name"], body, entry))
    return out


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_KUBECONFIG_BYTES + 1)
    except OSError as error:
        raise _error(f"kubeconfig {path}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_KUBECONFIG_BYTES:
        raise _error(f"kubeconfig {path}: larger than {MAX_KUBECONFIG_BYTES // (1024 * 1024)} MiB; "
                     "not a kubeconfig")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _error(f"kubeconfig {path}: not UTF-8 text") from None


def parse_kubeconfig(path: str) -> dict[str, Any] | None:
    """One kubeconfig file through the bounded YAML loader; None when it is empty."""
    text = _read_text(path)
    try:
        documents = list(iter_documents(text, max_alias_expansion=MAX_KUBECONFIG_ALIAS_EXPANSION,
                                        max_nodes=MAX_KUBECONFIG_NODES))
    except YAMLInputError as error:
        where = f"{path}:{error.line}" if error.line else path
        problem = error.problem.removeprefix("invalid YAML: ")
        raise _error(f"kubeconfig {where}: not valid YAML ({problem})") from None
    if len(documents) > 1:
        raise _error(f"kubeconfig {path}:{documents[1].line}: several YAML documents; a kubeconfig is one")
    if not documents:
        return None  # an empty file, as kubectl allows
    document = documents[0].data
    if not isinstance(document, dict):
        raise _error(f"kubeconfig {path}: not a kubeconfig (expected a mapping with clusters, users, contexts)")
    return document


def read_kubeconfig(paths: list[str], explicit: bool) -> Kubeconfig | None:
    """The merged kubeconfig, or None when no file exists and none was named."""
    existing = [os.path.expanduser(p) for p in paths if os.path.exists(os.path.expanduser(p))]
    if not existing:
        if explicit:
            raise _error(f"kubeconfig {', '.join(paths)}: no such file")
        return None
    merged = Kubeconfig(existing, {}, {}, {}, None, [])
    for path in existing:
        document = parse_kubeconfig(path)
        if document is None:
            continue
        for key, table in (("clusters", merged.clusters), ("contexts", merged.contexts), ("users", merged.users)):
            for name, body, raw in _named_entries(document, key, path):
                if name not in table:
                    table[name] = Entry(body, path, raw)
                    if key == "contexts":
                        merged.context_order.append(name)
        current = document.get("current-context")
        if merged.current_context is None and isinstance(current, str) and current:
            merged.current_context = current
    return merged


def _ca_data(cluster: dict[str, Any], context: str, where: str) -> bytes | None:
    raw = cluster.get("certificate-authority-data")
    if not raw:
        return None
    try:
        return base64.b64decode(str(raw), validate=True)
    except (binascii.Error, ValueError):
        raise _error(f"kubeconfig {where}: context {context}: certificate-authority-data is not base64") from None


def _configure(configuration: Any, concurrency: int) -> Any:
    from auditor import __version__

    # Our retries are the only ones: urllib3's are off (False also stops it
    # following redirects), and so are the client's client-go style retries.
    configuration.retries = False
    if hasattr(configuration, "client_go_retries"):
        configuration.client_go_retries = False
    configuration.connection_pool_maxsize = max(1, concurrency) + 1  # the workers, and the main thread
    configuration.user_agent = f"{USER_AGENT_PREFIX}/{__version__}"
    # A password in the server URL is never used by this client (urllib3 sends no
    # userinfo) and must never be shown: drop it here too.
    configuration.host = redact_url(str(configuration.host))
    return configuration


def _config_nodes(kubeconfig: Kubeconfig, current: str) -> Any:
    """The merged kubeconfig as the client's `ConfigNode` tree (what its own
    `KubeConfigMerger` would build), each entry remembering its file."""
    config_node = _kubernetes("config.kube_config").ConfigNode

    def entries(table: dict[str, Entry], key: str) -> list[Any]:
        return [config_node(f"{entry.path}/{key}[name={name}]", entry.raw, entry.path) for name, entry in table.items()]

    first = kubeconfig.paths[0]
    value = {"clusters": entries(kubeconfig.clusters, "clusters"), "contexts": entries(kubeconfig.contexts, "contexts"),
             "users": entries(kubeconfig.users, "users"), "current-context": current}
    return config_node(first, value, first)


@functools.lru_cache(maxsize=1)
def _loader_class() -> Any:
    """The client's `KubeConfigLoader`, with exec plugins run by `exec_plugin.run`."""
    kube_config = _kubernetes("config.kube_config")
    file_or_data, parse_rfc3339 = kube_config.FileOrData, _kubernetes("config.dateutil").parse_rfc3339
    base: Any = kube_config.KubeConfigLoader

    class BoundedLoader(base):  # type: ignore[misc]  # an untyped base
        exec_timeout: float | None = DEFAULT_EXEC_TIMEOUT
        user_name: str = ""

        def _load_from_exec_plugin(self) -> bool | None:
            if "exec" not in self._user:
                return None
            base_path = self._get_base_path(self._cluster.path)
            cluster = dict(self._cluster.value)
            for extension in cluster.get("extensions") or ():
                if isinstance(extension, dict) and extension.get("name") == "client.authentication.k8s.io/exec":
                    cluster["config"] = extension.get("extension")
            status = exec_plugin.run(self._user["exec"].value, base_path, cluster, self.exec_timeout, self.user_name)
            if isinstance(status.get("token"), str) and status["token"]:
                self.token = f"Bearer {status['token']}"
            else:
                self.cert_file = file_or_data(status, None, data_key_name="clientCertificateData",
                                              file_base_path=base_path, base64_file_content=False,
                                              temp_file_path=self._temp_file_path).as_file()
                self.key_file = file_or_data(status, None, data_key_name="clientKeyData",
                                             file_base_path=base_path, base64_file_content=False,
                                             temp_file_path=self._temp_file_path).as_file()
            if "expirationTimestamp" in status:
                self.expiry = parse_rfc3339(status["expirationTimestamp"])
            return True

    return BoundedLoader


def _load_context(kubeconfig: Kubeconfig, context: str, concurrency: int, exec_timeout: float | None) -> Target:
    configuration_class = _kubernetes("client").Configuration
    config_exception = _kubernetes("config.config_exception").ConfigException

    shown = printable(context)
    entry = kubeconfig.contexts[context].body
    cluster_name = entry.get("cluster")
    cluster_entry = kubeconfig.clusters.get(cluster_name) if isinstance(cluster_name, str) else None
    if cluster_entry is None:
        raise _error(f"kubeconfig {kubeconfig.where}: context {context} names cluster "
                     f"{str(cluster_name)[:200]!r}, which is not defined")
    cluster = cluster_entry.body
    raw_server = cluster.get("server")
    if not isinstance(raw_server, str) or not raw_server:
        raise _error(f"kubeconfig {kubeconfig.where}: cluster {cluster_name} has no server")
    server = clean(raw_server.rstrip("/"))
    ca = _ca_data(cluster, context, kubeconfig.where)
    configuration = type.__call__(configuration_class)
    user_name = entry.get("user")
    try:
        loader = _loader_class()(config_dict=_config_nodes(kubeconfig, context), active_context=context,
                                 config_base_path=None)
        loader.exec_timeout = exec_timeout
        loader.user_name = printable(str(user_name))
        loader.load_and_set(configuration)
    except ClusterError:
        raise
    except config_exception as error:
        raise _error(f"kubeconfig {kubeconfig.where}: context {context}: {_first_line(error)}") from None
    except Exception as error:  # auth providers: one line, never a traceback
        raise _error(f"kubeconfig {kubeconfig.where}: context {context}: cannot load credentials: "
                     f"{type(error).__name__}: {_first_line(error)}") from None
    return Target(shown, server, fingerprint(ca, server), _configure(configuration, concurrency),
                  origin=clean(kubeconfig.where))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def in_cluster_available(environ: dict[str, str] | None = None) -> bool:
    environ = dict(os.environ) if environ is None else environ
    return bool(environ.get("KUBERNETES_SERVICE_HOST"))


def load_in_cluster(concurrency: int, environ: dict[str, str] | None = None,
                    service_account_dir: str | None = None) -> Target:
    """The pod's service account (token and CA files, KUBERNETES_SERVICE_HOST/PORT)."""
    configuration_class = _kubernetes("client").Configuration
    config_exception = _kubernetes("config.config_exception").ConfigException
    loader_class = _kubernetes("config.incluster_config").InClusterConfigLoader

    environ = dict(os.environ if environ is None else environ)
    directory = service_account_dir or SERVICE_ACCOUNT_DIR
    environ.setdefault("KUBERNETES_SERVICE_PORT", "443")
    configuration = type.__call__(configuration_class)
    try:
        loader = loader_class(token_filename=os.path.join(directory, "token"),
                              cert_filename=os.path.join(directory, "ca.crt"), environ=environ)
        loader.load_and_set(configuration)
    except config_exception as error:
        raise _error(f"in-cluster configuration ({directory}): {_first_line(error)}") from None
    except OSError as error:
        raise _error(f"in-cluster configuration ({directory}): cannot read: {error.strerror or error}") from None
    server = clean(configuration.host.rstrip("/"))
    # The CA is a file path here: the fingerprint is the server URL's (see the module docstring).
    return Target(IN_CLUSTER_CONTEXT, server, fingerprint(None, server), _configure(configuration, concurrency),
                  origin="in-cluster service account")


def resolve(kubeconfig_path: str | None, contexts: tuple[str, ...] | list[str] = (), all_contexts: bool = False,
            concurrency: int = 8, environ: dict[str, str] | None = None, service_account_dir: str | None = None,
            exec_timeout: float | None = DEFAULT_EXEC_TIMEOUT) -> list[Target]:
    """The targets to read, or `ClusterError` with one line saying what is wrong."""
    paths, explicit = kubeconfig_paths(kubeconfig_path, environ)
    kubeconfig = read_kubeconfig(paths, explicit)
    if kubeconfig is None:
        if in_cluster_available(environ):
            if contexts or all_contexts:
                raise _error("--context/--all-contexts need a kubeconfig; in a pod only the in-cluster "
                             "service account is available")
            return [load_in_cluster(concurrency, environ, service_account_dir)]
        raise _error(f"no kubeconfig found (looked for {', '.join(paths)}; use --kubeconfig or KUBECONFIG) "
                     "and not running in a pod (KUBERNETES_SERVICE_HOST is not set)")
    if all_contexts:
        names = list(kubeconfig.context_order)
        if not names:
            raise _error(f"kubeconfig {kubeconfig.where}: defines no contexts")
    elif contexts:
        names = list(dict.fromkeys(contexts))
    else:
        if not kubeconfig.current_context:
            raise _error(f"kubeconfig {kubeconfig.where}: no current-context set (use --context)")
        names = [kubeconfig.current_context]
    for name in names:
        if name not in kubeconfig.contexts:
            known = ", ".join(kubeconfig.context_order) or "none"
            raise _error(f"kubeconfig {kubeconfig.where}: no context named {name!r} (contexts: {known})")
    return [_load_context(kubeconfig, name, concurrency, exec_timeout) for name in names]


# --- labels and the target guard -----------------------------------------------------


def check_expected(targets: list[Target], expected: tuple[str, ...] | list[str],
                   cluster_labels: dict[str, str]) -> None:
    """Refuse to audit a target that is not the expected cluster.

    Each expected value is a fingerprint or a posture label; every target must
    match one of them (by its fingerprint, or by a label whose fingerprint is
    the target's). The error names what was found and what was expected.
    No value at all means no guard: the command line refuses an empty
    `--expect-cluster` before it gets here (`cli/live.py`).
    """
    expected = [value for value in expected if value]
    if not expected:
        return
    for target in targets:
        if not any(value == target.fingerprint or cluster_labels.get(value) == target.fingerprint
                   for value in expected):
            found = f"fingerprint {target.fingerprint}"
            if target.label:
                found += f", label {target.label}"
            wanted = " or ".join(_describe_expected(value, cluster_labels) for value in expected)
            raise _error(
                f"target guard: context {target.context} ({target.server}) is cluster {found}, "
                f"not the expected {wanted}; refusing to audit"
            )


def _describe_expected(value: str, cluster_labels: dict[str, str]) -> str:
    if value in cluster_labels:
        return f"{value!r} (fingerprint {cluster_labels[value]})"
    return repr(value)
