"""The Cilium configuration pipeline: Helm values and live objects -> one effective configuration.

`helm_values` finds Cilium's Helm values (values files, Flux HelmReleases, Argo CD
Applications) and maps them to cilium-config keys; `config` merges them with the
cilium-config ConfigMap and the agent DaemonSet into a `CiliumConfig`.
"""
