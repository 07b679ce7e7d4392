"""A real HTTPS server speaking the (read-only) Kubernetes REST API over a
snapshot, for tests: kubectl and the official python client work against it.

Public API (see each module for details):

* `KubeApiServer(snapshot, ...)`: the server; a context manager.
* `User`, `RequestRecord`: identities and the request log's entries.
* `Fault`, `FaultPlan`: fault injection.
* `KubeconfigContext`, `write_kubeconfig`: kubeconfig files.
* `ResourceType`, `PrinterColumn`, `BUILTIN_RESOURCES`, `make_crd`: resources.
"""

from .crds import make_crd
from .faults import Fault, FaultPlan
from .resources import BUILTIN_RESOURCES, PrinterColumn, ResourceType
from .server import DEFAULT_TOKEN, DEFAULT_USER, KubeApiServer, RequestRecord, User
from .tls import KubeconfigContext, write_kubeconfig

__all__ = [
    "BUILTIN_RESOURCES", "DEFAULT_TOKEN", "DEFAULT_USER", "Fault", "FaultPlan",
    "KubeApiServer", "KubeconfigContext", "PrinterColumn", "RequestRecord", "ResourceType",
    "User", "make_crd", "write_kubeconfig",
]
