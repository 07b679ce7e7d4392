"""YAML emitters for the GitOps tree: hand-written style (indented sequences, comments),
vendored style (controller-gen / `helm template`: indentless sequences, `|-` blocks) and
Helm values files with helm-docs comments."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from synth_common import WORDS, Gen

COMMENTS = (
    "Exposition tout-Cilium (ADR 0020) : pas d'ingress-nginx, pas de MetalLB.",
    "Managed by Argo CD - do not edit by hand, change the source repository instead.",
    "NetworkPolicy par défaut : tout refuser, les flux légitimes sont ré-ouverts un à un.",
    "TODO(admin réseau): confirmer la plage LB-IPAM avant la mise en prod.",
    "Keep in sync with bootstrap/cni.sh (values are injected per environment).",
    "The nodePort is not pinned: Kubernetes allocates it in 30000-32767.",
    "Images are pinned by digest (ADR 0006); bump with `crane digest`.",
    "externalTrafficPolicy: leave Cluster. In L2 mode Local drops traffic on nodes without endpoints.",
    "Secret created and renewed by cert-manager (ClusterIssuer internal-ca).",
    "Resources sized for the hyperconverged nodes (ADR 0009).",
    "yaml-language-server: $schema=https://k8s-schemas.home-operations.com/cilium.io/ciliumnetworkpolicy_v2.json",
    "Ce fichier NE porte PAS metadata.namespace : appliqué avec -n par le rôle Ansible.",
)
INLINE = {"hostname": "placeholder .lan until DNS is delegated", "image": "renovate: datasource=docker",
          "containerPort": "must match the Service targetPort", "replicas": "non-HA: single replica (ADR 0002)",
          "storageClassName": "RBD replicated x3", "externalTrafficPolicy": "Cluster on purpose (L2)"}
_INLINE_RE = re.compile(r"^(\s*(?:- )?(" + "|".join(INLINE) + r")): ([^|>\s][^#\n]*)$", re.M)


def _str_repr(dumper: Any, s: str) -> yaml.ScalarNode:
    # Multi-line strings as literal blocks, the way people and controller-gen write them.
    if "\n" in s and not any(line != line.rstrip() for line in s.split("\n")):
        block: yaml.ScalarNode = dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
        return block
    plain: yaml.ScalarNode = dumper.represent_scalar("tag:yaml.org,2002:str", s)
    return plain


class HumanDumper(yaml.SafeDumper):
    """Indents sequences under their key (`ports:\\n  - name: http`), as most hand-written repos do."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True  # shared dicts must not turn into PyYAML's `&id001` anchors


class VendorDumper(yaml.CSafeDumper):
    """libyaml emitter (fast) with kubectl/controller-gen layout: indentless sequences."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


for _d in (HumanDumper, VendorDumper):
    _d.add_representer(str, _str_repr)


def human_docs(g: Gen, docs: list[dict[str, Any]], header: int = 3, inline: float = 0.3) -> str:
    """Multi-document file with a comment header, `---` separators and a few inline comments."""
    parts = []
    for i, doc in enumerate(docs):
        body = yaml.dump(doc, Dumper=HumanDumper, sort_keys=False, allow_unicode=True, width=100)
        body = _INLINE_RE.sub(lambda m: _inline(g, m, inline), body)
        lead = comment_block(g, header if i == 0 else g.between(0, 2))
        parts.append(lead + body)
    return "---\n".join(parts) if len(parts) > 1 else parts[0]


def _inline(g: Gen, m: re.Match[str], p: float) -> str:
    return f"{m.group(0)} # {INLINE[m.group(2)]}" if g.chance(p) else m.group(0)


def comment_block(g: Gen, n: int) -> str:
    return "".join(f"# {line}\n" for line in g.rng.sample(COMMENTS, min(n, len(COMMENTS))))


def vendor_docs(docs: list[dict[str, Any]], sources: list[str] | None = None) -> str:
    """`helm template` / release-bundle style: `---` + optional `# Source:` line per document."""
    out = []
    for i, doc in enumerate(docs):
        src = f"# Source: {sources[i]}\n" if sources else ""
        out.append("---\n" + src + yaml.dump(doc, Dumper=VendorDumper, sort_keys=False, allow_unicode=True,
                                              width=10_000))
    return "".join(out)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str) and re.fullmatch(r"[A-Za-z][\w./-]*", v) and v.lower() not in ("yes", "no", "on", "off",
                                                                                          "true", "false", "null"):
        return v
    return json.dumps(v)  # a JSON string is a valid YAML double-quoted scalar


def values_yaml(g: Gen, values: dict[str, Any], indent: int = 0) -> str:
    """Helm values with helm-docs `# --` comments and commented-out alternatives."""
    lines: list[str] = []
    pad = " " * indent
    for k, v in values.items():
        if g.chance(0.6):
            lines.append(f"{pad}# -- {k} for the {g.pick(WORDS)} component ({g.words(g.between(2, 8))}).")
        if isinstance(v, dict) and v:
            lines.append(f"{pad}{k}:")
            lines.append(values_yaml(g, v, indent + 2).rstrip("\n"))
        elif isinstance(v, list) and v:
            lines.append(f"{pad}{k}:")
            for item in v:
                if isinstance(item, dict):
                    first, *rest = list(item.items())
                    lines.append(f"{pad}  - {first[0]}: {_scalar(first[1])}")
                    lines += [f"{pad}    {ik}: {_scalar(iv)}" for ik, iv in rest]
                else:
                    lines.append(f"{pad}  - {_scalar(item)}")
        else:
            flow = "{}" if isinstance(v, dict) else "[]" if isinstance(v, list) else _scalar(v)
            lines.append(f"{pad}{k}: {flow}")
        if g.chance(0.1):
            lines.append(f"{pad}# {k}Override: \"\"")
    return "\n".join(lines) + "\n"
