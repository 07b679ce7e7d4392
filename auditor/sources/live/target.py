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

Credentials (tokens, client keys, exec plugins) are handled by the kubernetes
client's own loaders and never leave the `Configuration`: no message here
quotes a user entry.

Every target carries a *fingerprint*: the first 12 hex digits of the SHA-256
of the cluster's CA certificate data (`certificate-authority-data`), or of the
server URL when the CA is only named by a file path (a kubeconfig
`certificate-authority:` entry, the in-cluster service account) or absent.
It is stable across kubeconfig renames, so the target guard can check that a
context really points at the cluster one means (`--expect-cluster`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from auditor.errors import ClusterError
from auditor.model import ClusterInfo

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IN_CLUSTER_CONTEXT = "in-cluster"
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")
USER_AGENT_PREFIX = "cilium-exposure-auditor"


def fingerprint(ca_data: bytes | None, server: str) -> str:
    """First 12 hex digits of sha256(CA data), or of the server URL without CA data."""
    material = ca_data if ca_data else server.rstrip("/").encode()
    return hashlib.sha256(material).hexdigest()[:12]


@dataclass
class Target:
    """One cluster to read: where it is, what it is, and a client configuration for it."""

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
class Kubeconfig:
    paths: list[str]
    clusters: dict[str, dict]
    contexts: dict[str, dict]
    current_context: str | None
    context_order: list[str]

    @property
    def where(self) -> str:
        return ", ".join(self.paths)


def kubeconfig_paths(explicit: str | None, environ: dict | None = None) -> tuple[list[str], bool]:
    """The kubeconfig files to read, and whether they must exist (only `--kubeconfig` must).

    As with kubectl, files of KUBECONFIG that do not exist are skipped; when
    none exists there is no kubeconfig (and a pod falls back to in-cluster).
    """
    environ = os.environ if environ is None else environ
    if explicit:
        return [explicit], True
    env = environ.get("KUBECONFIG", "")
    if env:
        return [p for p in env.split(os.pathsep) if p], False
    return [os.path.expanduser(DEFAULT_KUBECONFIG)], False


def _named_entries(document: dict, key: str, path: str) -> list[tuple[str, dict]]:
    entries = document.get(key) or []
    if not isinstance(entries, list):
        raise ClusterError(f"kubeconfig {path}: {key} must be a list")
    out = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ClusterError(f"kubeconfig {path}: {key}[{index}] has no name")
        body = entry.get(key[:-1])  # clusters[].cluster, contexts[].context, users[].user
        if not isinstance(body, dict):
            raise ClusterError(f"kubeconfig {path}: {key}[{index}] ({entry['name']}) has no {key[:-1]} mapping")
        out.append((entry["name"], body))
    return out


def read_kubeconfig(paths: list[str], explicit: bool) -> Kubeconfig | None:
    """The merged kubeconfig, or None when no file exists and none was named."""
    existing = [os.path.expanduser(p) for p in paths if os.path.exists(os.path.expanduser(p))]
    if not existing:
        if explicit:
            raise ClusterError(f"kubeconfig {', '.join(paths)}: no such file")
        return None
    merged = Kubeconfig(existing, {}, {}, None, [])
    for path in existing:
        try:
            with open(path, encoding="utf-8") as stream:
                document = yaml.safe_load(stream)
        except OSError as error:
            raise ClusterError(f"kubeconfig {path}: cannot read: {error.strerror or error}") from None
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else path
            problem = getattr(error, "problem", None) or "not valid YAML"
            raise ClusterError(f"kubeconfig {where}: not valid YAML ({problem})") from None
        except UnicodeDecodeError:
            raise ClusterError(f"kubeconfig {path}: not UTF-8 text") from None
        if document is None:
            continue  # an empty file, as kubectl allows
        if not isinstance(document, dict):
            raise ClusterError(f"kubeconfig {path}: not a kubeconfig (expected a mapping with clusters, users, contexts)")
        for name, body in _named_entries(document, "clusters", path):
            merged.clusters.setdefault(name, body)
        for name, body in _named_entries(document, "contexts", path):
            if name not in merged.contexts:
                merged.contexts[name] = body
                merged.context_order.append(name)
        _named_entries(document, "users", path)  # validated; read by the client's loader
        current = document.get("current-context")
        if merged.current_context is None and isinstance(current, str) and current:
            merged.current_context = current
    return merged


def _ca_data(cluster: dict, context: str, where: str) -> bytes | None:
    raw = cluster.get("certificate-authority-data")
    if not raw:
        return None
    try:
        return base64.b64decode(str(raw), validate=True)
    except (binascii.Error, ValueError):
        raise ClusterError(f"kubeconfig {where}: context {context}: certificate-authority-data is not base64") from None


def _configure(configuration: Any, concurrency: int) -> Any:
    from auditor import __version__

    # Our retries are the only ones: urllib3's are off (False also stops it
    # following redirects), and so are the client's client-go style retries.
    configuration.retries = False
    if hasattr(configuration, "client_go_retries"):
        configuration.client_go_retries = False
    configuration.connection_pool_maxsize = max(1, concurrency) + 1  # the workers, and the main thread
    configuration.user_agent = f"{USER_AGENT_PREFIX}/{__version__}"
    return configuration


def _load_context(kubeconfig: Kubeconfig, context: str, concurrency: int) -> Target:
    from kubernetes.client import Configuration
    from kubernetes.config.kube_config import ConfigException, KubeConfigLoader, KubeConfigMerger

    entry = kubeconfig.contexts[context]
    cluster_name = entry.get("cluster")
    cluster = kubeconfig.clusters.get(cluster_name) if isinstance(cluster_name, str) else None
    if cluster is None:
        raise ClusterError(f"kubeconfig {kubeconfig.where}: context {context} names cluster {cluster_name!r}, "
                           "which is not defined")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise ClusterError(f"kubeconfig {kubeconfig.where}: cluster {cluster_name} has no server")
    server = server.rstrip("/")
    ca = _ca_data(cluster, context, kubeconfig.where)
    configuration = type.__call__(Configuration)
    try:
        merger = KubeConfigMerger(os.pathsep.join(kubeconfig.paths))
        if kubeconfig.current_context is not None:
            merger.config.value["current-context"] = kubeconfig.current_context
        loader = KubeConfigLoader(config_dict=merger.config, active_context=context, config_base_path=None)
        loader.load_and_set(configuration)
    except ClusterError:
        raise
    except ConfigException as error:
        raise ClusterError(f"kubeconfig {kubeconfig.where}: context {context}: {_first_line(error)}") from None
    except Exception as error:  # exec plugins, auth providers: one line, never a traceback
        raise ClusterError(f"kubeconfig {kubeconfig.where}: context {context}: cannot load credentials: "
                           f"{type(error).__name__}: {_first_line(error)}") from None
    return Target(context, server, fingerprint(ca, server), _configure(configuration, concurrency),
                  origin=kubeconfig.where)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def in_cluster_available(environ: dict | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return bool(environ.get("KUBERNETES_SERVICE_HOST"))


def load_in_cluster(concurrency: int, environ: dict | None = None,
                    service_account_dir: str | None = None) -> Target:
    """The pod's service account (token and CA files, KUBERNETES_SERVICE_HOST/PORT)."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    environ = dict(os.environ if environ is None else environ)
    directory = service_account_dir or SERVICE_ACCOUNT_DIR
    environ.setdefault("KUBERNETES_SERVICE_PORT", "443")
    configuration = type.__call__(Configuration)
    try:
        loader = InClusterConfigLoader(token_filename=os.path.join(directory, "token"),
                                       cert_filename=os.path.join(directory, "ca.crt"), environ=environ)
        loader.load_and_set(configuration)
    except ConfigException as error:
        raise ClusterError(f"in-cluster configuration ({directory}): {_first_line(error)}") from None
    except OSError as error:
        raise ClusterError(f"in-cluster configuration ({directory}): cannot read: {error.strerror or error}") from None
    server = configuration.host.rstrip("/")
    # The CA is a file path here: the fingerprint is the server URL's (see the module docstring).
    return Target(IN_CLUSTER_CONTEXT, server, fingerprint(None, server), _configure(configuration, concurrency),
                  origin="in-cluster service account")


def resolve(kubeconfig_path: str | None, contexts: tuple[str, ...] | list[str] = (), all_contexts: bool = False,
            concurrency: int = 8, environ: dict | None = None, service_account_dir: str | None = None) -> list[Target]:
    """The targets to read, or `ClusterError` with one line saying what is wrong."""
    paths, explicit = kubeconfig_paths(kubeconfig_path, environ)
    kubeconfig = read_kubeconfig(paths, explicit)
    if kubeconfig is None:
        if in_cluster_available(environ):
            if contexts or all_contexts:
                raise ClusterError("--context/--all-contexts need a kubeconfig; in a pod only the in-cluster "
                                   "service account is available")
            return [load_in_cluster(concurrency, environ, service_account_dir)]
        raise ClusterError(f"no kubeconfig found (looked for {', '.join(paths)}; use --kubeconfig or KUBECONFIG) "
                           "and not running in a pod (KUBERNETES_SERVICE_HOST is not set)")
    if all_contexts:
        names = list(kubeconfig.context_order)
        if not names:
            raise ClusterError(f"kubeconfig {kubeconfig.where}: defines no contexts")
    elif contexts:
        names = list(dict.fromkeys(contexts))
    else:
        if not kubeconfig.current_context:
            raise ClusterError(f"kubeconfig {kubeconfig.where}: no current-context set (use --context)")
        names = [kubeconfig.current_context]
    for name in names:
        if name not in kubeconfig.contexts:
            known = ", ".join(kubeconfig.context_order) or "none"
            raise ClusterError(f"kubeconfig {kubeconfig.where}: no context named {name!r} (contexts: {known})")
    return [_load_context(kubeconfig, name, concurrency) for name in names]


# --- labels and the target guard -----------------------------------------------------


def check_expected(targets: list[Target], expected: tuple[str, ...] | list[str], cluster_labels: dict[str, str]) -> None:
    """Refuse to audit a target that is not the expected cluster.

    Each expected value is a fingerprint or a posture label; every target must
    match one of them (by its fingerprint, or by a label whose fingerprint is
    the target's). The error names what was found and what was expected.
    """
    expected = [value for value in expected if value]
    if not expected:
        return
    for target in targets:
        ok = False
        for value in expected:
            if value == target.fingerprint:
                ok = True
            elif value in cluster_labels and cluster_labels[value] == target.fingerprint:
                ok = True
        if not ok:
            found = f"fingerprint {target.fingerprint}"
            if target.label:
                found += f", label {target.label}"
            wanted = " or ".join(_describe_expected(value, cluster_labels) for value in expected)
            raise ClusterError(
                f"target guard: context {target.context} ({target.server}) is cluster {found}, "
                f"not the expected {wanted}; refusing to audit"
            )


def _describe_expected(value: str, cluster_labels: dict[str, str]) -> str:
    if value in cluster_labels:
        return f"{value!r} (fingerprint {cluster_labels[value]})"
    return repr(value)
