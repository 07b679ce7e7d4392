"""`audit trace TARGET`: how traffic from the LAN reaches a hostname, a Service or a Gateway, hop by hop.

    found = trace(result, parse_target("argocd.cluster.lan"))   # result: the AuditResult of the input
    found.chains          # each way there: announcement, (lease), address, listener, certificate, route,
                          # backend, endpoints; each hop ok, broken or unseen, with its evidence
    found.first_broken    # (chain number, chain, hop) deciding the verdict, None when every chain is whole
    found.exit_code       # 0 whole, 1 a hop is broken, 3 a hop could not be seen

Built on the exposure model (docs/exposure.md); the certificate hop is
gateway-https-listener-tls's own judgement. Text and JSON: `auditor.trace.render`.
"""

from auditor.trace.build import UnknownTarget, known_targets, parse_target, trace, trace_clusters
from auditor.trace.hops import LEASE_PREFIX, lease_name
from auditor.trace.model import Chain, Hop, HopKind, HopStatus, Target, TargetKind, Trace

__all__ = [
    "LEASE_PREFIX", "Chain", "Hop", "HopKind", "HopStatus", "Target", "TargetKind", "Trace", "UnknownTarget",
    "known_targets", "lease_name", "parse_target", "trace", "trace_clusters",
]
