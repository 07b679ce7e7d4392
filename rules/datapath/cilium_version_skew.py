"""cilium-version-skew: agent and operator on different versions, or off the posture's line.

Versions are compared like with like: the running agent (DaemonSet) with the
running operator (Deployment), or the agent and operator images the Cilium Helm
values render. Never one of each: a chart version that is not rolled out yet
says nothing about the other component's running image, and one chart version
renders both images alike (values.yaml.tmpl: `image.tag` and
`operator.image.tag` are both `${CILIUM_VERSION}`), so only an explicit image
override can make the chart produce a skew.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    HelmValues,
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
AGENT_KEY = cilium_keys.AGENT_VERSION
OPERATOR_KEY = cilium_keys.OPERATOR_VERSION
# Where each image's values live in the chart, and the digest values that pin it.
IMAGE_PATHS: dict[str, tuple[str, ...]] = {"agent": ("image",), "operator": ("operator", "image")}
DIGEST_VALUES: dict[str, tuple[str, ...]] = {
    "agent": ("digest",),
    "operator": ("genericDigest", "awsDigest", "azureDigest", "alibabacloudDigest", "digest"),
}
CHART_VALUES = (
    "https://github.com/cilium/cilium/blob/002c6fff44159c64bdb86ebfb145157b33eb997f/"
    "install/kubernetes/cilium/values.yaml.tmpl"
)
OPERATOR_HELPERS = (
    "https://github.com/xmltiger/Cilium-for-OCI-v1.19/blob/9174961f07cc5f0a70550a689bf506ef14c853c3/"
    "install/kubernetes/cilium/templates/cilium-operator/_helpers.tpl"
)


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


def _helm_truthy(value: Any) -> bool:
    """Go template truthiness (`useDigest | default false`): false, 0, "", null and empty collections are off."""
    if isinstance(value, (bool, int, float, str, list, dict)):
        return bool(value)
    return value is not None


def _best(running: _Component | None, chart: _Component | None) -> _Component | None:
    """What a component runs: the running object's version when readable, else the chart's."""
    if running is not None and (running.version is not None or chart is None):
        return running
    return chart


def _one_per_release(agent: _Component | None, operator: _Component | None) -> list[_Component]:
    """The components to judge against the posture's line: one for both when the same values render
    them at the same version (one chart version, one finding)."""
    present = [c for c in (agent, operator) if c is not None]
    if (agent is not None and operator is not None and agent.obj is None and operator.obj is None
            and agent.where == operator.where and agent.version == operator.version):
        return [dataclasses.replace(agent, label="agent and operator")]
    return present


@dataclass(frozen=True)
class _Component:
    """A Cilium component's version as read, where, and how (None: not in the input)."""

    label: str
    where: tuple[ObjectRef, Source | None] | None
    text: str | None
    version: Version | None
    obj: K8sObject | None = None
    how: str = ""  # for chart images: `image.tag v1.19.3`, `the chart version 1.19.2`
    pinned: str = ""  # for chart images: why the tag written is not what runs


def chart_image(component: str, helm: HelmValues | None, setting: Setting) -> _Component:
    """The version the chart renders for `component` from the values that set it.

    `<image>.override` replaces the whole reference; otherwise the reference is
    `repository:tag@digest`, the digest being the chart's own one for its version
    while `useDigest` is on (the release charts' default) and no digest value is set.
    A tag set alone then keeps the chart's digest, and runtimes pull by digest: the
    image is the chart version's, whatever the tag says.
    """
    path = ".".join(IMAGE_PATHS[component])
    where = (setting.ref, setting.source) if setting.ref is not None else None
    values: Mapping[str, Any] = helm.values if helm is not None else {}
    image = values
    for part in IMAGE_PATHS[component]:
        image = as_mapping(image.get(part))
    chart = helm.chart_version if helm is not None else None
    override, tag = image.get("override"), image.get("tag")
    if isinstance(override, str) and override:
        return _Component(component, where, setting.value, parse_version(setting.value),
                          how=f"{path}.override {override}")
    if not (isinstance(tag, str) and tag):
        return _Component(component, where, setting.value, parse_version(setting.value),
                          how=f"the chart version {setting.value}")
    own_digest = any(isinstance(image.get(name), str) and image.get(name) for name in DIGEST_VALUES[component])
    use_digest = _helm_truthy(image.get("useDigest", True))
    written = f"{path}.tag {tag}"
    if chart is not None and use_digest and not own_digest and parse_version(tag) != parse_version(chart):
        pinned = (f"{written} keeps the chart's own {chart} digest ({path}.useDigest is on, by default, and no "
                  f"{path} digest is set): runtimes pull by digest, so the {component} runs chart {chart}'s image "
                  "whatever the tag says")
        return _Component(component, where, chart, parse_version(chart), how=f"chart {chart} (the digest wins over "
                          f"{written})", pinned=pinned)
    return _Component(component, where, setting.value, parse_version(setting.value), how=written)


class CiliumVersionSkew(Rule):
    id = "cilium-version-skew"
    severity = Severity.ERROR
    title = "Cilium agent and operator versions differ, or are off the posture's version line"
    rationale_fact = (
        "The Cilium chart deploys the agent DaemonSet (quay.io/cilium/cilium:vX.Y.Z) and the operator "
        "Deployment cilium-operator (quay.io/cilium/operator-generic:vX.Y.Z) at one version: both image tags "
        "default to the chart's version, each with that release's digest (useDigest on), so one chart version "
        "fixes agent and operator alike. Only image.override / operator.image.override, or a tag with its own "
        "digest (or with useDigest off), makes them differ; a tag set alone keeps the chart's digest, and "
        "runtimes pull by digest. Different running versions mean a half-done upgrade or rollback, in which "
        "the operator (LB-IPAM, Gateway API, CRD registration) and the agents disagree on features."
    )
    rationale_decision = (
        "The platform runs one Cilium release line (posture expected.ciliumVersionLine, default 1.19), "
        "and every fact this auditor encodes is checked for that line. A different minor version "
        "between agent and operator, or a component below the posture's line, is an error; a "
        "patch-level difference, or a line newer than the posture's (update the posture), a warning. "
        "Versions are compared like with like: the running DaemonSet and Deployment (image tags), else the "
        "images the Cilium Helm values render (image overrides, tags, else the chart version), never one of "
        "each. A tag written without its digest, which the chart's digest silently overrides, is a warning. "
        "When no pair is readable the verdict is not-run."
    )
    remediation = (
        "Finish the upgrade so the agent and operator run the same release of the posture's "
        "line (helm upgrade with one chart version and no per-image overrides, then check "
        "`cilium version`), or update the posture's expected.ciliumVersionLine after a deliberate upgrade; "
        "to pin another image, set its digest too (or useDigest: false)."
    )
    requires = (
        AnyOf(kinds.DEPLOYMENT, *cilium_keys.CONFIG_KINDS, name="the operator Deployment or the Cilium configuration"),
    )
    cilium_settings = (AGENT_KEY, OPERATOR_KEY)
    posture_fields = ("expected.ciliumVersionLine",)
    facts = (
        Fact(
            "The agent image tag is the Cilium version (quay.io/cilium/cilium:vX.Y.Z); the generic "
            "operator image is quay.io/cilium/operator-generic:vX.Y.Z, in Deployment cilium-operator.",
            "Cilium chart",
            "https://docs.cilium.io/en/stable/helm-reference/",
        ),
        Fact(
            "The chart's values set image.tag and operator.image.tag from the same release version, with the "
            "release's digests (image.digest, operator.image.genericDigest/awsDigest/azureDigest/"
            "alibabacloudDigest) and useDigest; the operator image is override, else "
            "repository-<cloud><suffix>:tag@digest when useDigest is on.",
            "Cilium 1.15+ chart (override values); 1.19 template read",
            CHART_VALUES,
            also=(OPERATOR_HELPERS,),
        ),
        Fact(
            "A reference with both a tag and a digest is pulled by digest; the tag is not used to resolve it.",
            "Docker, containerd, CRI-O (containers/image)",
            "https://github.com/docker/cli/issues/4545",
            also=("https://github.com/IBM/portieris/issues/90",),
        ),
    )
    references = ("https://docs.cilium.io/en/stable/operations/upgrade/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        running_agent = self._running_agent(ctx)
        running_operator = self._running_operator(snapshot, ctx.cilium_namespace)
        chart_agent = self._chart(ctx, "agent", AGENT_KEY)
        chart_operator = self._chart(ctx, "operator", OPERATOR_KEY)
        agent, operator = _best(running_agent, chart_agent), _best(running_operator, chart_operator)
        if (agent is None or agent.version is None) and (operator is None or operator.version is None):
            raise NotRun(
                "neither the Cilium agent nor the cilium-operator version is readable from the input "
                f"(agent: {self._unread(agent, 'no image tag')}; operator: "
                f"{self._unread(operator, 'no Deployment ' + OPERATOR_NAME)})"
            )
        findings = [f for c in _one_per_release(agent, operator) for f in self._off_the_line(ctx, c)]
        findings += [self._pinned(c) for c in (chart_agent, chart_operator) if c is not None and c.pinned]
        findings += [f for running, chart in ((running_agent, chart_agent), (running_operator, chart_operator))
                     for f in self._not_rolled_out(running, chart)]
        pair = self._pair(running_agent, running_operator, chart_agent, chart_operator)
        if pair is not None:
            findings += self._skew(*pair)
        elif not findings:
            raise NotRun(self._no_pair(running_agent, running_operator, chart_agent, ctx))
        yield from findings

    def _not_rolled_out(self, running: _Component | None, chart: _Component | None) -> list[Finding]:
        """A running component at another version than the Helm values render it (a warning)."""
        if running is None or chart is None or running.obj is None or None in (running.version, chart.version):
            return []
        if running.version == chart.version:
            return []
        return [self.finding(
            running.obj,
            f"the {running.label} runs {running.text} but the Cilium Helm values render it at {chart.text} "
            f"({chart.how}): the release is not rolled out (or this is not the chart's {running.label})",
            Severity.WARNING,
        )]

    @staticmethod
    def _pair(running_agent: _Component | None, running_operator: _Component | None,
              chart_agent: _Component | None, chart_operator: _Component | None,
              ) -> tuple[_Component, _Component] | None:
        """The running pair when both run, else the chart pair: never one of each."""
        for agent, operator in ((running_agent, running_operator), (chart_agent, chart_operator)):
            if agent is not None and operator is not None and None not in (agent.version, operator.version):
                return agent, operator
        return None

    def _skew(self, agent: _Component, operator: _Component) -> list[Finding]:
        if agent.version == operator.version:
            return []
        minor = agent.version is not None and operator.version is not None and agent.version[:2] != operator.version[:2]
        differ = " in minor version" if minor else " in patch version"
        severity = None if minor else Severity.WARNING
        if operator.obj is not None:
            message = f"operator {operator.text} and agent {agent.text} differ{differ}"
            return [self.finding(operator.obj, message, severity)]
        assert operator.where is not None  # a chart component always comes from a Helm source
        return [Finding(
            object=operator.where[0],
            message=(f"the Cilium Helm values render the operator at {operator.text} ({operator.how}) and the agent "
                     f"at {agent.text} ({agent.how}): they differ{differ}; one chart version sets both images, so an "
                     "image override makes this skew"),
            source=operator.where[1],
            severity=severity,
        )]

    @staticmethod
    def _pinned(component: _Component) -> Finding:
        assert component.where is not None
        return Finding(object=component.where[0], message=component.pinned, source=component.where[1],
                       severity=Severity.WARNING)

    @staticmethod
    def _off_the_line(ctx: RuleContext, component: _Component) -> Iterator[Finding]:
        """A component below the posture's line (an error) or above it (a warning: update the posture)."""
        line_text = ctx.posture.cilium_version_line
        line = version_line(line_text)
        if component.version is None or component.where is None:
            return
        ctx.examined(component.where[0])
        if line is None or component.version[:2] == line:
            return
        severity: Severity | None = None
        verb = "are" if " and " in component.label else "is"
        if component.version[:2] < line:
            message = f"Cilium {component.label} {component.text} {verb} below the posture's line {line_text}"
        else:
            message = (f"Cilium {component.label} {component.text} {verb} newer than the posture's line {line_text}: "
                       "update the posture")
            severity = Severity.WARNING
        yield Finding(object=component.where[0], message=message, source=component.where[1], severity=severity)

    @staticmethod
    def _running_agent(ctx: RuleContext) -> _Component | None:
        """The agent version the DaemonSet's image shows (a `${VAR}` tag counts as unknown)."""
        agent = ctx.cilium_agent
        running = [s for s in ctx.setting_sources(AGENT_KEY) if agent is not None and s.ref == agent.ref]
        if agent is None:
            return None
        where = (agent.ref, agent.source)
        if not running or not running[0].concrete:
            return _Component("agent", where, None, None, agent)
        return _Component("agent", where, running[0].value, parse_version(running[0].value), agent)

    @staticmethod
    def _running_operator(snapshot: Snapshot, namespace: str) -> _Component | None:
        deployment = _operator_deployment(snapshot, namespace)
        if deployment is None:
            return None
        text = image_tag_version(_operator_image(deployment))
        return _Component("operator", (deployment.ref, deployment.source), text, parse_version(text), deployment)

    @staticmethod
    def _chart(ctx: RuleContext, component: str, key: str) -> _Component | None:
        """The component's image as the highest-precedence Cilium Helm values render it."""
        helm_by_ref = {helm.ref: helm for helm in ctx.helm_values}
        for setting in ctx.setting_sources(key):
            if setting.ref in helm_by_ref and setting.concrete:
                return chart_image(component, helm_by_ref[setting.ref], setting)
        return None

    @staticmethod
    def _unread(component: _Component | None, absent: str) -> str:
        if component is None:
            return absent
        return component.text or "no image tag"

    @staticmethod
    def _no_pair(running_agent: _Component | None, running_operator: _Component | None,
                 chart_agent: _Component | None, ctx: RuleContext) -> str:
        if running_agent is None and running_operator is not None and chart_agent is not None:
            return ("the agent version comes from the Cilium Helm values and the operator's from its running "
                    "Deployment: a chart not rolled out yet says nothing about the running agent, so skew is "
                    "not judged across the two")
        missing = "agent" if (running_agent or chart_agent) is None else "cilium-operator"
        return (f"only one component's version is readable, so skew cannot be judged: the {missing} "
                f"version is not in the input (namespace {ctx.cilium_namespace})")
