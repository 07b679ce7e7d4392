"""cilium-version-skew: agent and operator on different versions, or off the posture's line."""

from __future__ import annotations

from typing import Iterator

from auditor import kinds
from auditor.cilium.config import Setting
from auditor.model import Finding, K8sObject, ObjectRef, Severity, Source, as_list, as_mapping
from auditor.rule import Fact, NotRun, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import CONFIG_KINDS, SOURCE_KINDS
from auditor_rules._components import cilium_namespace, image_name, image_tag_version, parse_version, version_line

OPERATOR_NAME = "cilium-operator"
VERSION_KEY = "agent-version"


def _operator(snapshot: Snapshot, namespace: str) -> K8sObject | None:
    candidates = [d for d in snapshot.of_kind(kinds.DEPLOYMENT) if d.name == OPERATOR_NAME]
    candidates.sort(key=lambda d: (d.namespace != namespace, d.namespace or ""))
    return candidates[0] if candidates else None


def _operator_image(deployment: K8sObject) -> str | None:
    """The image of the `cilium-operator` container (or the first `operator*` image)."""
    pod_spec = as_mapping(as_mapping(deployment.spec.get("template")).get("spec"))
    containers = [c for c in as_list(pod_spec.get("containers")) if isinstance(c, dict)]
    for container in containers:
        if container.get("name") == OPERATOR_NAME and isinstance(container.get("image"), str):
            return container["image"]
    for container in containers:
        image = container.get("image")
        if isinstance(image, str) and image_name(image).startswith("operator"):
            return image
    return None


class CiliumVersionSkew(Rule):
    id = "cilium-version-skew"
    severity = Severity.ERROR
    title = "Cilium agent and operator versions differ, or are off the posture's version line"
    rationale = (
        "The platform runs one Cilium release line (posture expected.ciliumVersionLine, default "
        "1.19), and every fact this auditor encodes (CRD versions, option names, Gateway API "
        "bundle, known bugs) is checked for that line. The chart deploys the agent DaemonSet "
        "(quay.io/cilium/cilium:vX.Y.Z) and the operator Deployment cilium-operator "
        "(quay.io/cilium/operator-generic:vX.Y.Z) at the same version; different versions mean "
        "a half-done upgrade or rollback, where the operator (LB-IPAM, Gateway API, CRD "
        "registration) and the agents disagree on features. A different minor version, or a "
        "component below the posture's line, is an error; a patch-level difference, or a line "
        "newer than the posture's (update the posture), a warning. Versions come from the "
        "image tags; when neither is readable the verdict is not-run."
    )
    remediation = (
        "Finish the upgrade so the agent and operator run the same release of the posture's "
        "line (helm upgrade with one chart version, then check `cilium version`), or update "
        "the posture's expected.ciliumVersionLine after a deliberate upgrade."
    )
    requires = ((kinds.DEPLOYMENT, *CONFIG_KINDS),)
    uses = SOURCE_KINDS
    facts = (
        Fact(
            "The agent image tag is the Cilium version (quay.io/cilium/cilium:vX.Y.Z); the generic "
            "operator image is quay.io/cilium/operator-generic:vX.Y.Z, in Deployment cilium-operator.",
            "Cilium chart",
            "https://docs.cilium.io/en/stable/helm-reference/",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/operations/upgrade/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        namespace = cilium_namespace(ctx)
        agent_setting = ctx.cilium.get(VERSION_KEY)
        if agent_setting is not None and not agent_setting.concrete:
            agent_setting = None  # a `${VAR}` tag: unknown
        agent_text = agent_setting.value if agent_setting is not None else None
        agent_version = parse_version(agent_text)
        operator = _operator(snapshot, namespace)
        operator_text = image_tag_version(_operator_image(operator)) if operator is not None else None
        operator_version = parse_version(operator_text)
        if agent_version is None and operator_version is None:
            raise NotRun(
                "neither the Cilium agent nor the cilium-operator version is readable from the input "
                f"(agent: {agent_text or 'no image tag'}; operator: "
                f"{'no Deployment ' + OPERATOR_NAME if operator is None else operator_text or 'no image tag'})"
            )
        line_text = ctx.posture.cilium_version_line
        line = version_line(line_text)
        findings: list[Finding] = []
        components = (
            ("agent", self._agent_anchor(ctx, agent_setting), agent_text, agent_version),
            ("operator", (operator.ref, operator.source) if operator is not None else None, operator_text,
             operator_version),
        )
        for label, where, text, version in components:
            if version is None or where is None:
                continue
            ctx.examined(where[0])
            if line is None or version[:2] == line:
                continue
            if version[:2] < line:
                message, severity = f"Cilium {label} {text} is below the posture's line {line_text}", None
            else:
                message = f"Cilium {label} {text} is newer than the posture's line {line_text}: update the posture"
                severity = Severity.WARNING
            findings.append(Finding(object=where[0], message=message, source=where[1], severity=severity))
        if agent_version is not None and operator_version is not None and operator is not None:
            if agent_text != operator_text:
                minor = agent_version[:2] != operator_version[:2]
                findings.append(self.finding(
                    operator,
                    f"operator {operator_text} and agent {agent_text} differ"
                    + (" in minor version" if minor else " in patch version"),
                    None if minor else Severity.WARNING,
                ))
        elif not findings:
            missing = "agent" if agent_version is None else "cilium-operator"
            raise NotRun(
                f"only one component's version is readable, so skew cannot be judged: the {missing} "
                f"version is not in the input (namespace {namespace})"
            )
        yield from findings

    @staticmethod
    def _agent_anchor(ctx: RuleContext, setting: Setting | None) -> tuple[ObjectRef, Source | None] | None:
        """Where the agent version was read (the DaemonSet, or the Helm values' image tag)."""
        if setting is None:
            return None
        ref = getattr(setting, "ref", None)
        if isinstance(ref, ObjectRef):
            return ref, getattr(setting, "source", None)
        agent = getattr(ctx.cilium, "agent", None)
        return (agent.ref, agent.source) if isinstance(agent, K8sObject) else None
