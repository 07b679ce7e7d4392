"""cilium-version-skew: agent and operator on different versions, or off the posture's line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    NotRun,
    ObjectRef,
    Rule,
    RuleContext,
    Setting,
    Severity,
    Snapshot,
    Source,
    Version,
    as_list,
    as_mapping,
    cilium_keys,
    image_name,
    image_tag_version,
    kinds,
    parse_version,
    version_line,
)

OPERATOR_NAME = "cilium-operator"


def _operator_deployment(snapshot: Snapshot, namespace: str) -> K8sObject | None:
    candidates = [d for d in snapshot.of_kind(kinds.DEPLOYMENT) if d.name == OPERATOR_NAME]
    candidates.sort(key=lambda d: (d.namespace != namespace, d.namespace or ""))
    return candidates[0] if candidates else None


def _operator_image(deployment: K8sObject) -> str | None:
    """The image of the `cilium-operator` container (or the first `operator*` image)."""
    pod_spec = as_mapping(as_mapping(deployment.spec.get("template")).get("spec"))
    containers = [c for c in as_list(pod_spec.get("containers")) if isinstance(c, dict)]
    for container in containers:
        image = container.get("image")
        if container.get("name") == OPERATOR_NAME and isinstance(image, str):
            return image
    for container in containers:
        image = container.get("image")
        if isinstance(image, str) and image_name(image).startswith("operator"):
            return image
    return None


class CiliumVersionSkew(Rule):
    id = "cilium-version-skew"
    severity = Severity.ERROR
    title = "Cilium agent and operator versions differ, or are off the posture's version line"
    rationale_fact = (
        "The Cilium chart deploys the agent DaemonSet (quay.io/cilium/cilium:vX.Y.Z) and the operator "
        "Deployment cilium-operator (quay.io/cilium/operator-generic:vX.Y.Z) at one version. Different "
        "versions mean a half-done upgrade or rollback, in which the operator (LB-IPAM, Gateway API, "
        "CRD registration) and the agents disagree on features."
    )
    rationale_decision = (
        "The platform runs one Cilium release line (posture expected.ciliumVersionLine, default 1.19), "
        "and every fact this auditor encodes is checked for that line. A different minor version "
        "between agent and operator, or a component below the posture's line, is an error; a "
        "patch-level difference, or a line newer than the posture's (update the posture), a warning. "
        "Versions come from the image tags (or the Helm image tag and chart version); when neither "
        "component's is readable the verdict is not-run."
    )
    remediation = (
        "Finish the upgrade so the agent and operator run the same release of the posture's "
        "line (helm upgrade with one chart version, then check `cilium version`), or update "
        "the posture's expected.ciliumVersionLine after a deliberate upgrade."
    )
    requires = (
        AnyOf(kinds.DEPLOYMENT, *cilium_keys.CONFIG_KINDS, name="the operator Deployment or the Cilium configuration"),
    )
    cilium_settings = (cilium_keys.AGENT_VERSION,)
    posture_fields = ("expected.ciliumVersionLine",)
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
        agent = self._agent(ctx)
        operator = self._operator(snapshot, ctx.cilium_namespace)
        if agent.version is None and operator.version is None:
            raise NotRun(
                "neither the Cilium agent nor the cilium-operator version is readable from the input "
                f"(agent: {agent.text or 'no image tag'}; operator: "
                f"{'no Deployment ' + OPERATOR_NAME if operator.where is None else operator.text or 'no image tag'})"
            )
        line_text = ctx.posture.cilium_version_line
        findings = [f for c in (agent, operator) for f in self._off_the_line(ctx, c, line_text)]
        if agent.version is not None and operator.version is not None and operator.obj is not None:
            if agent.text != operator.text:
                minor = agent.version[:2] != operator.version[:2]
                findings.append(self.finding(
                    operator.obj,
                    f"operator {operator.text} and agent {agent.text} differ"
                    + (" in minor version" if minor else " in patch version"),
                    None if minor else Severity.WARNING,
                ))
        elif not findings:
            missing = "agent" if agent.version is None else "cilium-operator"
            raise NotRun(
                f"only one component's version is readable, so skew cannot be judged: the {missing} "
                f"version is not in the input (namespace {ctx.cilium_namespace})"
            )
        yield from findings

    @staticmethod
    def _off_the_line(ctx: RuleContext, component: _Component, line_text: str) -> Iterator[Finding]:
        """A component below the posture's line (an error) or above it (a warning: update the posture)."""
        line = version_line(line_text)
        if component.version is None or component.where is None:
            return
        ctx.examined(component.where[0])
        if line is None or component.version[:2] == line:
            return
        severity: Severity | None = None
        if component.version[:2] < line:
            message = f"Cilium {component.label} {component.text} is below the posture's line {line_text}"
        else:
            message = (f"Cilium {component.label} {component.text} is newer than the posture's line {line_text}: "
                       "update the posture")
            severity = Severity.WARNING
        yield Finding(object=component.where[0], message=message, source=component.where[1], severity=severity)

    @staticmethod
    def _agent(ctx: RuleContext) -> _Component:
        """The agent version (a `${VAR}` tag counts as unknown) and where it was read."""
        setting: Setting | None = ctx.agent_version()
        if setting is None:
            return _Component("agent", None, None, None)
        where = (setting.ref, setting.source) if setting.ref is not None else None
        if where is None and ctx.cilium_agent is not None:
            where = (ctx.cilium_agent.ref, ctx.cilium_agent.source)
        return _Component("agent", where, setting.value, parse_version(setting.value))

    @staticmethod
    def _operator(snapshot: Snapshot, namespace: str) -> _Component:
        deployment = _operator_deployment(snapshot, namespace)
        if deployment is None:
            return _Component("operator", None, None, None)
        text = image_tag_version(_operator_image(deployment))
        return _Component("operator", (deployment.ref, deployment.source), text, parse_version(text), deployment)


@dataclass(frozen=True)
class _Component:
    """A Cilium component's version as read, and where (None: not in the input)."""

    label: str
    where: tuple[ObjectRef, Source | None] | None
    text: str | None
    version: Version | None
    obj: K8sObject | None = None
