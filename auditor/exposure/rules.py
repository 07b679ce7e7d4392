"""The rules that judge each kind of way in (their findings carry the verdict of the model's entrances).

The model names, for every entrance, the rule whose finding about the
entrance's subject says whether it is drift or excepted; the rules are the
built-in ones of `rules/exposure` and `rules/gateway`.
"""

LB_RULE = "lb-service-not-excepted"
NODEPORT_RULE = "nodeport-service-not-excepted"
EXTERNAL_IPS_RULE = "service-external-ips"
HOSTPORT_RULE = "hostport-not-excepted"
# hostNetwork pods, and Gateways in hostNetwork mode (Cilium's Envoy listening on the nodes' addresses).
HOSTNETWORK_RULE = "hostnetwork-pod-not-excepted"

EXPOSURE_RULES = (LB_RULE, NODEPORT_RULE, EXTERNAL_IPS_RULE, HOSTPORT_RULE, HOSTNETWORK_RULE)
