"""The effective Cilium configuration: ConfigMap, agent DaemonSet and Helm values.

Helm values come from a plain values file (`--cilium-values`), a Flux
HelmRelease or an Argo CD Application; they are mapped to the cilium-config
keys of docs/cilium-facts.md §8, with the precedence ConfigMap > values file >
HelmRelease/Application and every origin recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.cilium import config as cilium_config
from auditor.cilium import helm_values, keys
from auditor.errors import InputError
from auditor.snapshot import Snapshot
from auditor.sources.files import read_paths
from tests.conftest import one_line_error, run_cli

HOMELAB = "homelab"


def _snapshot(tmp_path: Path, text: str, name: str = "input.yaml") -> Snapshot:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_paths([str(path)])


def _values_file(tmp_path: Path, text: str, name: str = "values.yaml") -> helm_values.HelmValues:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return helm_values.read_values_file(str(path))


def _settings(config: cilium_config.CiliumConfig) -> dict[str, str]:
    return {key: setting.value for key, setting in config.settings.items()}


CILIUM_CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {kube-proxy-replacement: "true", enable-l2-announcements: "false"}
"""

VALUES = """\
kubeProxyReplacement: true
k8sServiceHost: 10.0.0.10
k8sServicePort: 6443
k8sClientRateLimit: {qps: 32.5, burst: 40}
l2announcements:
  enabled: true
  leaseDuration: 15s
  leaseRenewDeadline: 5s
  leaseRetryPeriod: 2s
gatewayAPI:
  enabled: true
  hostNetwork: {enabled: true}
encryption: {enabled: true, type: wireguard, nodeEncryption: true}
hostFirewall: {enabled: false}
routingMode: native
ipam:
  operator: {clusterPoolIPv4PodCIDRList: [10.0.0.0/16, 10.1.0.0/16]}
bgpControlPlane: {enabled: false}
cni: {chainingMode: none}
policyEnforcementMode: Always
image: {tag: v1.19.1}
"""


# --- the mapping -----------------------------------------------------------------------


def test_plain_values_file_maps_to_cilium_config_keys(tmp_path: Path) -> None:
    values = _values_file(tmp_path, VALUES)
    config = cilium_config.resolve(Snapshot.build([]), [values])
    assert config.settings_known
    assert _settings(config) == {
        "kube-proxy-replacement": "true",
        "env.KUBERNETES_SERVICE_HOST": "10.0.0.10",
        "env.KUBERNETES_SERVICE_PORT": "6443",
        "k8s-client-qps": "32.5",
        "k8s-client-burst": "40",
        "enable-l2-announcements": "true",
        "l2-announcements-lease-duration": "15s",
        "l2-announcements-renew-deadline": "5s",
        "l2-announcements-retry-period": "2s",
        "enable-gateway-api": "true",
        "gateway-api-hostnetwork-enabled": "true",
        "enable-wireguard": "true",
        "encrypt-node": "true",
        "enable-host-firewall": "false",
        "routing-mode": "native",
        "cluster-pool-ipv4-cidr": "10.0.0.0/16 10.1.0.0/16",
        "enable-bgp-control-plane": "false",
        "cni-chaining-mode": "none",
        "enable-policy": "always",
        "agent-version": "1.19.1",
    }
    assert config.version() == (1, 19, 1)
    qps = config.get("k8s-client-qps")
    assert qps is not None and qps.source is not None
    assert qps.source.line == 4 and qps.origin.endswith("values.yaml:4")
    assert qps.origin.startswith("k8sClientRateLimit.qps in Helm values file ")
    assert qps.ref is not None and qps.ref.kind == keys.VALUES_FILE_KIND
    assert config.origins == [f"Helm values file {tmp_path / 'values.yaml'}"]


@pytest.mark.parametrize(
    "values, expected",
    [
        ("encryption: {enabled: true, type: ipsec}", {"enable-ipsec": "true"}),
        ("encryption: {enabled: false, type: ipsec}", {}),
        ("encryption: {enabled: false, type: wireguard, nodeEncryption: true}", {}),
        ("encryption: {enabled: true}", {}),
        ("encryption: {enabled: true, type: '${ENC}'}", {"enable-wireguard": "${ENC}", "enable-ipsec": "${ENC}"}),
        ("ipam: {mode: kubernetes, operator: {clusterPoolIPv4PodCIDRList: [10.0.0.0/8]}}", {"ipam": "kubernetes"}),
        ("ipam: {operator: {clusterPoolIPv4PodCIDRList: 10.0.0.0/8}}", {"cluster-pool-ipv4-cidr": "10.0.0.0/8"}),
        ("k8sClientRateLimit: {qps: 0, burst: null}", {}),
        ("k8sServiceHost: ''", {}),
        ("kubeProxyReplacement: strict", {"kube-proxy-replacement": "strict"}),
        ("kubeProxyReplacement: [true]", {}),
        ("image: {override: 'quay.io/cilium/cilium:v1.19.2@sha256:abc', tag: v1.0.0}", {"agent-version": "1.19.2"}),
        ("nodePort: {enabled: true}\nexternalIPs: {enabled: false}",
         {"enable-node-port": "true", "enable-external-ips": "false"}),
        ("defaultLBServiceIPAM: nodeipam", {"default-lb-service-ipam": "nodeipam"}),
        # The chart renders the IPv6 cluster pool only with ipv6.enabled (default false).
        ("ipam: {operator: {clusterPoolIPv6PodCIDRList: ['fd00::/104']}}", {}),
        ("ipv6: {enabled: true}\nipam: {mode: kubernetes, operator: {clusterPoolIPv6PodCIDRList: ['fd00::/104']}}",
         {"ipam": "kubernetes"}),
        ("1: 2\ntrue: x\nnull: y", {}),
    ],
)
def test_mapping_edge_cases(tmp_path: Path, values: str, expected: dict) -> None:
    config = cilium_config.resolve(Snapshot.build([]), [_values_file(tmp_path, values)])
    assert _settings(config) == expected


# For every key of auditor/cilium/keys.py that Helm values render: values setting the Helm
# value(s) the table names, and the value the key then takes. A key added to the table
# without its example here fails `test_every_helm_mapped_key_has_an_example`.
HELM_EXAMPLES: dict[str, tuple[str, str]] = {
    "kube-proxy-replacement": ("kubeProxyReplacement: true", "true"),
    "enable-node-port": ("nodePort: {enabled: true}", "true"),
    "enable-host-port": ("hostPort: {enabled: false}", "false"),
    "enable-external-ips": ("externalIPs: {enabled: true}", "true"),
    "enable-l2-announcements": ("l2announcements: {enabled: true}", "true"),
    "l2-announcements-lease-duration": ("l2announcements: {leaseDuration: 20s}", "20s"),
    "l2-announcements-renew-deadline": ("l2announcements: {leaseRenewDeadline: 8s}", "8s"),
    "l2-announcements-retry-period": ("l2announcements: {leaseRetryPeriod: 1s}", "1s"),
    "k8s-client-qps": ("k8sClientRateLimit: {qps: 50}", "50"),
    "k8s-client-burst": ("k8sClientRateLimit: {burst: 100}", "100"),
    "enable-gateway-api": ("gatewayAPI: {enabled: true}", "true"),
    "gateway-api-hostnetwork-enabled": ("gatewayAPI: {hostNetwork: {enabled: true}}", "true"),
    "gateway-api-service-externaltrafficpolicy": ("gatewayAPI: {externalTrafficPolicy: Local}", "Local"),
    "enable-bgp-control-plane": ("bgpControlPlane: {enabled: true}", "true"),
    "default-lb-service-ipam": ("defaultLBServiceIPAM: none", "none"),
    "ipam": ("ipam: {mode: multi-pool}", "multi-pool"),
    "enable-host-firewall": ("hostFirewall: {enabled: true}", "true"),
    "routing-mode": ("routingMode: native", "native"),
    "cni-chaining-mode": ("cni: {chainingMode: aws-cni}", "aws-cni"),
    "env.KUBERNETES_SERVICE_HOST": ("k8sServiceHost: 10.0.0.10", "10.0.0.10"),
    "env.KUBERNETES_SERVICE_PORT": ("k8sServicePort: 6443", "6443"),
    "enable-policy": ("policyEnforcementMode: Always", "always"),
    "enable-wireguard": ("encryption: {enabled: true, type: wireguard}", "true"),
    "enable-ipsec": ("encryption: {enabled: true, type: ipsec}", "true"),
    "encrypt-node": ("encryption: {enabled: true, type: wireguard, nodeEncryption: true}", "true"),
    "cluster-pool-ipv4-cidr": ("ipam: {operator: {clusterPoolIPv4PodCIDRList: [10.0.0.0/16, 10.1.0.0/16]}}",
                               "10.0.0.0/16 10.1.0.0/16"),
    "cluster-pool-ipv6-cidr": ("ipv6: {enabled: true}\nipam: {operator: {clusterPoolIPv6PodCIDRList: ['fd00::/104']}}",
                               "fd00::/104"),
    "agent-version": ("image: {tag: v1.19.3}", "1.19.3"),
    "operator-version": ("operator: {image: {override: 'quay.io/cilium/operator-generic:v1.19.1@sha256:ab'}}",
                         "1.19.1"),
}


def test_every_helm_mapped_key_has_an_example() -> None:
    assert set(HELM_EXAMPLES) == {name for name, key in keys.KEYS.items() if key.helm}


@pytest.mark.parametrize("key", sorted(HELM_EXAMPLES))
def test_the_key_table_says_which_helm_values_render_each_key(tmp_path: Path, key: str) -> None:
    text, expected = HELM_EXAMPLES[key]
    values = _values_file(tmp_path, text + "\n")
    config = cilium_config.resolve(Snapshot.build([]), [values])
    setting = config.get(key)
    assert setting is not None, f"{text!r} does not render {key}"
    assert setting.value == expected
    # The origin names a Helm value of the table: that is what a finding about the key shows.
    assert any(setting.origin.startswith(f"{path} in Helm values file") for path in keys.KEYS[key].helm), setting.origin


def test_substitutions_are_kept_and_not_concrete(tmp_path: Path) -> None:
    config = cilium_config.resolve(
        Snapshot.build([]), [_values_file(tmp_path, "l2announcements: {enabled: '${L2_ENABLED:=true}'}")]
    )
    setting = config.get("enable-l2-announcements")
    assert setting is not None and setting.value == "${L2_ENABLED:=true}" and not setting.concrete
    assert config.concrete_value("enable-l2-announcements") is None
    assert config.value("enable-l2-announcements") == "${L2_ENABLED:=true}"
    assert config.concrete_value("enable-l2-announcements") is None


def test_empty_values_file_is_chart_defaults(tmp_path: Path) -> None:
    config = cilium_config.resolve(Snapshot.build([]), [_values_file(tmp_path, "# nothing set\n")])
    assert config.settings_known and config.settings == {}


# --- HelmRelease and Application -----------------------------------------------------------


def test_flux_helmrelease_values(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cilium, namespace: kube-system}
spec:
  chart:
    spec: {chart: cilium, version: 1.19.1, sourceRef: {kind: HelmRepository, name: cilium}}
  values:
    kubeProxyReplacement: true
    l2announcements: {enabled: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: default}
spec:
  chart: {spec: {chart: app-template}}
  values: {kubeProxyReplacement: false}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert config.settings_known
    assert _settings(config) == {
        "kube-proxy-replacement": "true",
        "enable-l2-announcements": "true",
        "agent-version": "1.19.1",
        "operator-version": "1.19.1",  # one chart version sets both images
    }
    setting = config.get("kube-proxy-replacement")
    assert setting is not None and setting.ref is not None
    assert setting.ref.display == "HelmRelease/kube-system/cilium"
    assert setting.origin.startswith("spec.values.kubeProxyReplacement of HelmRelease kube-system/cilium (")
    assert config.get("agent-version").origin.startswith("chart version of HelmRelease")
    assert len(config.origins) == 1


def test_flux_chart_ref_to_an_oci_repository(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata: {name: cilium-chart, namespace: flux-system}
spec:
  url: oci://ghcr.io/home-operations/charts-mirror/cilium
  ref: {tag: 1.19.3}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: networking, namespace: kube-system}
spec:
  chartRef: {kind: OCIRepository, name: cilium-chart, namespace: flux-system}
  values: {kubeProxyReplacement: true}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert config.value("kube-proxy-replacement") == "true"
    assert config.value("agent-version") == "1.19.3"


def test_flux_values_from_makes_absent_keys_unknown(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cilium, namespace: kube-system}
spec:
  chart: {spec: {chart: cilium}}
  valuesFrom: [{kind: ConfigMap, name: cilium-values}]
  values: {kubeProxyReplacement: true}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert not config.settings_known
    assert config.value("kube-proxy-replacement") == "true"  # what is shown still counts
    assert any("takes values from elsewhere" in note for note in config.notes)


def test_argo_application_values_string_and_values_object(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cilium, namespace: argocd}
spec:
  source:
    repoURL: https://helm.cilium.io
    chart: cilium
    targetRevision: 1.19.1
    helm:
      values: |
        kubeProxyReplacement: false
        l2announcements:
          enabled: true
          leaseRenewDeadline: 3s
        routingMode: tunnel
      valuesObject:
        kubeProxyReplacement: true
        l2announcements: {leaseRenewDeadline: 4s}
      parameters:
        - {name: routingMode, value: native}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert config.settings_known
    assert _settings(config) == {
        "kube-proxy-replacement": "true",
        "enable-l2-announcements": "true",
        "l2-announcements-renew-deadline": "4s",
        "routing-mode": "native",
        "agent-version": "1.19.1",
        "operator-version": "1.19.1",
    }
    origins = {key: setting.origin.split(" of ")[0] for key, setting in config.settings.items()}
    assert origins["kube-proxy-replacement"] == "spec.source.helm.valuesObject.kubeProxyReplacement"
    assert origins["enable-l2-announcements"] == "spec.source.helm.values.l2announcements.enabled"
    renew = origins["l2-announcements-renew-deadline"]
    assert renew == "spec.source.helm.valuesObject.l2announcements.leaseRenewDeadline"
    assert origins["routing-mode"] == "spec.source.helm.parameters.routingMode"


def test_argo_multi_source_application(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: platform, namespace: argocd}
spec:
  sources:
    - {repoURL: https://github.com/example/platform.git, ref: values}
    - repoURL: https://helm.cilium.io
      chart: cilium
      helm: {valuesObject: {kubeProxyReplacement: true}}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    setting = config.get("kube-proxy-replacement")
    assert setting is not None and setting.origin.startswith("spec.sources[1].helm.valuesObject.kubeProxyReplacement")


@pytest.mark.parametrize(
    "helm",
    [
        "values: 'a: [1'",
        "values: '- a\\n- b'",
        "valueFiles: [values-prod.yaml]",
        "parameters: [{name: 'a[0].b', value: x}]",
    ],
)
def test_argo_values_the_auditor_cannot_read_are_noted(tmp_path: Path, helm: str) -> None:
    snapshot = _snapshot(
        tmp_path,
        f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: cilium, namespace: argocd}}
spec:
  source:
    chart: cilium
    helm: {{{helm}}}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert not config.settings_known
    assert config.notes


def test_argo_values_string_alias_bomb_is_refused(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\\n"
    bomb += "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\\n"
    bomb += "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]"
    snapshot = _snapshot(
        tmp_path,
        f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: cilium, namespace: argocd}}
spec:
  source: {{chart: cilium, helm: {{values: "{bomb}"}}}}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    assert any("alias" in note for note in config.notes)


# --- precedence and origins -------------------------------------------------------------------


def test_precedence_configmap_then_values_file_then_helmrelease(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        CILIUM_CONFIG_MAP
        + """\
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cilium, namespace: kube-system}
spec:
  chart: {spec: {chart: cilium}}
  values:
    kubeProxyReplacement: false
    l2announcements: {enabled: true}
    routingMode: tunnel
    bgpControlPlane: {enabled: true}
""",
    )
    values = _values_file(tmp_path, "kubeProxyReplacement: false\nroutingMode: native\n")
    config = cilium_config.resolve(snapshot, [values])
    assert config.value("kube-proxy-replacement") == "true"  # the ConfigMap is what the agent reads
    assert config.value("enable-l2-announcements") == "false"
    assert config.value("routing-mode") == "native"  # values file over HelmRelease
    assert config.value("enable-bgp-control-plane") == "true"  # only the HelmRelease sets it
    kinds = [s.ref.kind for s in config.candidates["kube-proxy-replacement"]]
    assert kinds == ["ConfigMap", keys.VALUES_FILE_KIND, "HelmRelease"]
    assert [s.value for s in config.shadowed("kube-proxy-replacement")] == ["false", "false"]
    assert config.shadowed("enable-bgp-control-plane") == []
    assert [origin.split(" ")[0] for origin in config.origins] == ["ConfigMap", "Helm", "HelmRelease"]
    assert config.anchor is not None and config.anchor[0].kind == "ConfigMap"


def test_later_values_file_wins(tmp_path: Path) -> None:
    first = _values_file(tmp_path, "kubeProxyReplacement: false\nroutingMode: native\n", "base.yaml")
    second = _values_file(tmp_path, "kubeProxyReplacement: true\n", "override.yaml")
    config = cilium_config.resolve(Snapshot.build([]), [first, second])
    assert config.value("kube-proxy-replacement") == "true"
    assert config.get("kube-proxy-replacement").origin.endswith("override.yaml:1")
    assert config.value("routing-mode") == "native"
    assert config.origins == [first.origin, second.origin]
    assert config.anchor is not None and config.anchor[0].name.endswith("override.yaml")


def test_values_files_of_the_snapshot_reach_resolve(tmp_path: Path) -> None:
    values = _values_file(tmp_path, "kubeProxyReplacement: true\n")
    assert not cilium_config.resolve(Snapshot.build([])).found
    snapshot = Snapshot.build([], cilium_values=[values])
    assert cilium_config.resolve(snapshot).value("kube-proxy-replacement") == "true"


def test_a_values_file_alone_lets_configuration_rules_run(tmp_path: Path) -> None:
    """Manifests without any Cilium object, plus --cilium-values: the rules that only
    need the configuration reach a verdict instead of not-run."""
    from tests.conftest import run_cli

    manifests = tmp_path / "app.yaml"
    manifests.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n", encoding="utf-8")
    values = tmp_path / "values.yaml"
    values.write_text("kubeProxyReplacement: true\nk8sServiceHost: 10.0.0.10\nk8sServicePort: 6443\n"
                      "encryption: {enabled: false}\n", encoding="utf-8")
    result = run_cli(str(manifests), "--cilium-values", str(values), "--format", "json",
                     "--rule", "kpr-not-enabled", "--rule", "wireguard-disabled")
    report = json.loads(result.stdout)
    statuses = {r["id"]: r["status"] for r in report["rules"]}
    assert statuses == {"kpr-not-enabled": "passed", "wireguard-disabled": "failed"}
    assert f"--cilium-values {values}" in report["target"]["inputs"]
    (finding,) = report["findings"]
    assert finding["file"] == str(values)


def test_agent_env_value_from_is_set_but_not_concrete(tmp_path: Path) -> None:
    snapshot = _snapshot(
        tmp_path,
        """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system}
spec:
  template:
    spec:
      containers:
        - name: cilium-agent
          image: quay.io/cilium/cilium:v1.19.1@sha256:0123
          env:
            - {name: KUBERNETES_SERVICE_HOST, valueFrom: {configMapKeyRef: {name: api, key: host}}}
            - {name: KUBERNETES_SERVICE_PORT, value: "6443"}
""",
    )
    config = cilium_config.resolve(snapshot, [])
    host = config.get("env.KUBERNETES_SERVICE_HOST")
    assert host is not None and not host.concrete and "configMapKeyRef api/host" in host.value
    assert config.value("env.KUBERNETES_SERVICE_PORT") == "6443"
    assert config.value("agent-version") == "1.19.1"
    assert not config.settings_known and config.found


# --- malformed values files: one line, exit 2 ------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("kubeProxyReplacement: true\nl2announcements: [enabled\n",
         r"values\.yaml:3: Cilium values file: invalid YAML"),
        ("- kubeProxyReplacement\n",
         r"values\.yaml:1: Cilium values file must be a mapping of Helm values, found a list"),
        ("a: 1\n---\nb: 2\n", r"values\.yaml:3: Cilium values file: expected one YAML document"),
        ("a: 1\na: 2\n", r"values\.yaml:2: Cilium values file: duplicate key 'a'"),
    ],
)
def test_malformed_values_file_is_one_line_exit_2(tmp_path: Path, text: str, expected: str) -> None:
    import re

    manifest = tmp_path / "cm.yaml"
    manifest.write_text(CILIUM_CONFIG_MAP, encoding="utf-8")
    values = tmp_path / "values.yaml"
    values.write_text(text, encoding="utf-8")
    line = one_line_error(run_cli(str(manifest), "--cilium-values", str(values)))
    assert re.search(expected, line), line


def test_unreadable_values_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read Cilium values file"):
        helm_values.read_values_file(str(tmp_path / "missing.yaml"))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"a: \x00\x01")
    with pytest.raises(InputError, match="binary"):
        helm_values.read_values_file(str(binary))
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputError, match=r"latin\.yaml:2: Cilium values file is not valid UTF-8"):
        helm_values.read_values_file(str(latin))
    with pytest.raises(InputError, match="Cilium values file"):
        helm_values.read_values_file(str(tmp_path))  # a folder
    result = run_cli(str(binary), "--cilium-values", str(tmp_path / "missing.yaml"))
    assert result.code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_values_file_feeds_the_rules_through_the_cli(tmp_path: Path) -> None:
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system}
spec: {template: {spec: {containers: [{name: cilium-agent, image: "quay.io/cilium/cilium:v1.19.1"}]}}}
""",
        encoding="utf-8",
    )
    base = tmp_path / "values.yaml"
    base.write_text("routingMode: native\nkubeProxyReplacement: false\n", encoding="utf-8")
    override = tmp_path / "values-prod.yaml"
    override.write_text("kubeProxyReplacement: true\n", encoding="utf-8")

    without = run_cli(str(manifest), "--rule", "kpr-not-enabled", "--format", "json")
    assert without.code == 0, without
    assert json.loads(without.stdout)["rules"][0]["status"] == "not-run"

    failing = run_cli(str(manifest), "--rule", "kpr-not-enabled", "--format", "json", "--cilium-values", str(base))
    assert failing.code == 1, failing
    (finding,) = json.loads(failing.stdout)["findings"]
    assert finding["object"]["kind"] == "HelmValues" and finding["object"]["name"] == str(base)
    assert finding["file"] == str(base) and finding["line"] == 2
    assert "kubeProxyReplacement in Helm values file" in finding["message"]

    passing = run_cli(
        str(manifest), "--rule", "kpr-not-enabled", "--cilium-values", str(base), "--cilium-values", str(override)
    )
    assert passing.code == 0, passing


# --- the shared corpus of real GitOps repositories ----------------------------------------------------


def _homelab(corpus: Path, name: str) -> Path:
    path = corpus / HOMELAB / name
    if not path.is_file():
        pytest.skip(f"{path} not in the shared corpus")
    return path


@pytest.mark.parametrize(
    "name, expected",
    [
        (
            "onedr0p__home-ops/kubernetes__apps__kube-system__cilium__app__helmrelease.yaml",
            {"kube-proxy-replacement": "true", "enable-l2-announcements": "false", "enable-bgp-control-plane": "true",
             "env.KUBERNETES_SERVICE_HOST": "127.0.0.1", "env.KUBERNETES_SERVICE_PORT": "7445",
             "routing-mode": "native"},
        ),
        (
            "onedr0p__home-ops/kubernetes__apps__kube-system__cilium__app__helmrelease@912659a.yaml",
            {"kube-proxy-replacement": "strict", "enable-l2-announcements": "true",
             "l2-announcements-renew-deadline": "60s", "agent-version": "1.14.0-rc.0"},
        ),
        (
            "vember31__home-ops/kubernetes__apps__kube-system__cilium__app__helmrelease.yaml",
            {"kube-proxy-replacement": "false", "enable-l2-announcements": "false",
             "cluster-pool-ipv4-cidr": "10.42.0.0/16", "ipam": "cluster-pool"},
        ),
        (
            "nasenov__homelab/kubernetes__main__apps__kube-system__cilium__app__helmrelease.yaml",
            {"kube-proxy-replacement": "true", "enable-l2-announcements": "true", "agent-version": "1.16.3"},
        ),
        (
            "Diaoul__home-ops/kubernetes__apps__kube-system__cilium__app__helmrelease@fb1c002.yaml",
            {"kube-proxy-replacement": "true", "enable-gateway-api": "true", "enable-l2-announcements": "true"},
        ),
    ],
)
def test_corpus_helmreleases(corpus: Path, name: str, expected: dict) -> None:
    config = cilium_config.resolve(read_paths([str(_homelab(corpus, name))]), [])
    assert config.settings_known
    settings = _settings(config)
    assert {key: settings.get(key) for key in expected} == expected


def test_corpus_helmrelease_of_another_chart_is_ignored(corpus: Path) -> None:
    path = _homelab(corpus, "nasenov__homelab/kubernetes__main__apps__networking__bloky__app__helmrelease.yaml")
    config = cilium_config.resolve(read_paths([str(path)]), [])
    assert not config.found


def test_corpus_plain_values_file(corpus: Path) -> None:
    path = _homelab(corpus, "bjw-s-labs__home-ops/kubernetes__apps__kube-system__cilium__app__values.yaml")
    values = helm_values.read_values_file(str(path))
    config = cilium_config.resolve(Snapshot.build([]), [values])
    assert _settings(config) == {
        "kube-proxy-replacement": "true",
        "enable-l2-announcements": "true",
        "enable-bgp-control-plane": "true",
        "env.KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "env.KUBERNETES_SERVICE_PORT": "7445",
        "ipam": "kubernetes",
        "routing-mode": "native",
    }
    assert config.get("kube-proxy-replacement").source.line == 39


def test_corpus_rules_over_a_helmrelease(corpus: Path) -> None:
    path = _homelab(corpus, "onedr0p__home-ops/kubernetes__apps__kube-system__cilium__app__helmrelease@912659a.yaml")
    result = run_cli(str(path), "--rule", "kpr-removed-value", "--rule", "kpr-missing-api-endpoint", "--format", "json")
    report = json.loads(result.stdout)
    statuses = {rule["id"]: rule["status"] for rule in report["rules"]}
    # strict on a 1.14 chart: deprecated (warning), not yet removed; the endpoint is set.
    assert statuses == {"kpr-removed-value": "failed", "kpr-missing-api-endpoint": "passed"}
    (finding,) = report["findings"]
    assert finding["severity"] == "warning" and "deprecated since Cilium 1.14" in finding["message"]
    assert result.code == 0, result  # a warning does not fail the default gate
