"""What a rule plugin is: declarative metadata plus one `check` generator.

A rule yields `Finding`s about objects; it never prints, exits, or looks at
the exception list (the engine applies it to every rule alike). When the data
a rule needs is not in the snapshot it raises `NotRun` with the reason, so the
verdict says "could not tell" instead of "passed".

A rule declares everything it reads: the kinds (`requires`, `uses`), the Cilium
settings (`cilium_settings`) and the posture fields (`posture_fields`). The
kinds that carry the Cilium configuration are added from the settings, so
`audit live --rule X` lists what X needs; reading a setting or posture field a
rule does not declare raises `UndeclaredRead` (the rule ends in `error`).
Plugins import all of this from `auditor.api`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import InitVar, dataclass, field
from operator import attrgetter
from typing import ClassVar

from auditor.cilium import keys
from auditor.cilium.config import Anchor, CiliumConfig, Setting
from auditor.cilium.helm_values import HelmValues
from auditor.exposure import ExposureModel, Subject
from auditor.exposure import build as build_exposure_model
from auditor.model import Finding, K8sObject, ObjectRef, Severity, string_labels
from auditor.posture import Posture, UndeclaredRead, declared_view
from auditor.snapshot import CoverageState, Snapshot
from auditor.versions import Version, parse_version

NO_CONFIG = (
    "the input shows no Cilium configuration (no cilium-config ConfigMap, no HelmRelease or Argo CD "
    "Application of the cilium chart with all its values, no --cilium-values file)"
)
# The version judged against when the input shows no agent version and the posture's line is unreadable.
_FALLBACK_LINE: Version = (1, 19, 0)

_REF = attrgetter("ref")  # K8sObject.ref


class AnyOf(tuple[str, ...]):
    """A requirement met when any one of several kinds is known: `AnyOf(kinds.SERVICE, kinds.GATEWAY)`.

    `name` says what the alternatives stand for in a not-run reason ("the
    Cilium configuration"). It is a tuple of the kinds, so code reading
    requirements as tuples keeps working.
    """

    name: str

    def __new__(cls, *kinds: str, name: str = "") -> AnyOf:
        requirement = super().__new__(cls, kinds)
        requirement.name = name
        return requirement

    def __repr__(self) -> str:
        named = f", name={self.name!r}" if self.name else ""
        return f"AnyOf({', '.join(repr(k) for k in self)}{named})"


# The Cilium configuration: the cilium-config ConfigMap, the agent DaemonSet, or Helm values in a
# HelmRelease or an Argo CD Application (a --cilium-values file given beside the input meets it too).
CILIUM_CONFIGURATION = AnyOf(*keys.CONFIG_KINDS, name="the Cilium configuration")

# One group-kind, or alternatives. A plain tuple is the pre-AnyOf spelling, still read for plugins.
Requirement = str | AnyOf | tuple[str, ...]


@dataclass(frozen=True)
class Fact:
    """A checked fact a rule relies on, with the versions it holds for and its source (a URL).

    Shown in the generated rule reference (docs/rules.md), so an operator can
    see what the rule assumes about Cilium or Kubernetes, and re-check it when
    upgrading.
    """

    statement: str
    holds_for: str
    source: str
    # Further sources for the same fact (URLs).
    also: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unseen:
    """Part of what a rule judges that the input did not show it, and why: its verdict is on the rest.

    Recorded with `RuleContext.did_not_see`. A passed or failed rule with
    any `Unseen` is *partial*: reports show "did not see: ..." after its
    verdict, never a full pass, and `--require-complete` counts it as
    incomplete (docs/rules.md, "Verdicts").
    """

    what: str  # what was not seen: a kind ("ConfigMaps"), or the objects it stands for
    reason: str  # why: "the input holds no ConfigMap objects"
    # Set by the engine when the configuration declares the rule not applicable here: the gap is accepted,
    # with its reason and line ("declared not applicable here: REASON (FILE:LINE)"); the verdict still counts.
    declared: str = ""

    def __str__(self) -> str:
        return f"{self.what} ({self.reason}; {self.declared})" if self.declared else f"{self.what} ({self.reason})"


class NotRun(Exception):
    """Raised by a rule whose input does not show what it needs to judge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Rule:
    """Base class of every rule plugin. Subclasses set the metadata below."""

    id: ClassVar[str]
    severity: ClassVar[Severity]
    title: ClassVar[str]
    # Why the rule exists, in two parts so it reads right outside the platform too:
    # what Cilium or Kubernetes does (true on any cluster), then what the platform decided.
    rationale_fact: ClassVar[str] = ""
    rationale_decision: ClassVar[str] = ""
    # Both parts as one text (set from them), for reports that show one paragraph.
    rationale: ClassVar[str]
    remediation: ClassVar[str]
    # Kinds that must be known for a verdict (else not-run, or error when a read failed).
    requires: ClassVar[tuple[Requirement, ...]] = ()
    # Further kinds the rule reads when they are there; the live reader lists them too.
    uses: ClassVar[tuple[str, ...]] = ()
    # Cilium settings read through the RuleContext (auditor/cilium/keys.py names them).
    cilium_settings: ClassVar[tuple[str, ...]] = ()
    # Posture file fields read through ctx.posture (`expected.ciliumVersionLine`; auditor/posture.py FIELDS).
    posture_fields: ClassVar[tuple[str, ...]] = ()
    # Public sources for the facts the rationale relies on (URLs).
    references: ClassVar[tuple[str, ...]] = ()
    # The Cilium/Kubernetes facts the rule encodes, with versions and sources.
    facts: ClassVar[tuple[Fact, ...]] = ()
    # What a pass means when the rule examined no object: what the input holds none of, said as
    # "no <what> in the input" ("Service of type LoadBalancer"). A rule that examines nothing and
    # does not say this is not-run ("checked nothing"): an empty result is no evidence (fail closed).
    nothing_to_check: ClassVar[str] = ""
    # Examples live in the rule's case file (cases/<id>.yaml beside its module):
    # the cases tagged `explain: fail` and `explain: pass` (auditor.testing).

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "rationale" not in cls.__dict__ and (cls.rationale_fact or cls.rationale_decision):
            cls.rationale = "\n\n".join(part for part in (cls.rationale_fact, cls.rationale_decision) if part)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, obj: K8sObject, message: str, severity: Severity | None = None) -> Finding:
        """A finding about `obj`, pointing at where it was read, carrying its labels (for exceptions)."""
        labels = tuple(sorted(string_labels(obj.labels).items()))
        return Finding(object=obj.ref, message=message, source=obj.source, severity=severity, labels=labels)

    def finding_about(self, subject: Subject, message: str, severity: Severity | None = None) -> Finding:
        """A finding about the subject of a way in of the exposure model (`ctx.exposures`): an object of
        the input, the HelmRelease whose values declare a Service (at the values line), or a Service a
        Gateway controller makes (with the labels it will carry, so exceptions match it before and after)."""
        return Finding(object=subject.ref, message=message, source=subject.source, severity=severity,
                       labels=subject.labels)

    @classmethod
    def requirements(cls) -> tuple[AnyOf, ...]:
        """`requires` with every entry as an AnyOf (one kind is an AnyOf of one)."""
        return tuple(r if isinstance(r, AnyOf) else AnyOf(r) if isinstance(r, str) else AnyOf(*r) for r in cls.requires)

    @classmethod
    def kinds_read(cls) -> list[str]:
        """Every kind the rule reads: required, used, and those carrying the Cilium settings it reads."""
        read: set[str] = set(cls.uses)
        for requirement in cls.requirements():
            read.update(requirement)
        if cls.cilium_settings:
            read.update(keys.SOURCE_KINDS)
        return sorted(read)


def kinds_read_by(rules: Iterable[Rule]) -> list[str]:
    """The kinds a set of rules reads (what `audit live` lists and `audit rbac` grants)."""
    return sorted({gk for rule in rules for gk in rule.kinds_read()})


@dataclass
class RuleContext:
    """What a rule may consult besides the snapshot. One per rule and run.

    The Cilium configuration is read through the methods below, never as raw
    resolver state: they turn "the input cannot tell" into `NotRun` with the
    reason, and check the rule declared the setting. Built with `rule`, the
    context also restricts `posture` to the rule's declared fields.
    """

    snapshot: Snapshot
    posture: Posture
    cilium: InitVar[CiliumConfig]
    rule: InitVar[Rule | None] = None
    examined_refs: list[ObjectRef] = field(default_factory=list)
    # What the rule could not see (did_not_see), in the order recorded.
    unseen: list[Unseen] = field(default_factory=list)
    # The exposure model of the snapshot, built once by the engine for every rule (built on first
    # use when the context is made without one).
    exposure_model: InitVar[ExposureModel | None] = None

    def __post_init__(self, cilium: CiliumConfig, rule: Rule | None, exposure_model: ExposureModel | None) -> None:
        self._config = cilium
        self._exposures = exposure_model
        self._full_posture = self.posture
        self._rule_id = rule.id if rule is not None else None
        self._declared: frozenset[str] | None = None
        if rule is not None:
            self._declared = frozenset(rule.cilium_settings)
            self.posture = declared_view(self.posture, rule.posture_fields, rule.id)

    # --- what was checked, and which kinds are known -----------------------------------

    def examined(self, obj: K8sObject | ObjectRef) -> None:
        """Record that `obj` was checked (reporters list passing objects too)."""
        self.examined_refs.append(obj.ref if isinstance(obj, K8sObject) else obj)

    def examined_all(self, objects: Iterable[K8sObject]) -> None:
        """Record that every one of `objects` was checked (`examined` for each, at C speed: a rule
        that judges every Service of a 100k-object dump records 100k of them)."""
        self.examined_refs.extend(map(_REF, objects))

    def known(self, gk: str) -> bool:
        return self.snapshot.coverage(gk).state.known

    def did_not_see(self, what: str, reason: str) -> None:
        """Record that the verdict is on part of the input: `what` (a kind, or the objects it stands for)
        was not in view, for `reason`. The rule goes on judging what it sees; its verdict is then partial.
        Recording the same thing twice is recording it once.

        Say it for what the verdict rests on (an alternative of `requires` the input does not show, the
        objects of a set the rule could judge only in part), not for a `uses` kind read when it is there.
        """
        unseen = Unseen(what, reason)
        if unseen not in self.unseen:
            self.unseen.append(unseen)

    def did_not_see_kind(self, gk: str, what: str | None = None) -> bool:
        """`did_not_see` the kind `gk` when the snapshot does not know it (with its coverage reason);
        True when it was not seen. `what` names it for people (default: the group-kind)."""
        coverage = self.snapshot.coverage(gk)
        if coverage.state.known:
            return False
        self.did_not_see(what or gk, coverage.reason or f"{gk} is not known")
        return True

    @property
    def exposures(self) -> ExposureModel:
        """Every way in from outside the cluster (auditor.exposure): read it, never rebuild the chain.

        Verdicts depend on the posture: judge an entrance with `exposure.sanction(entrance, ctx.posture)`,
        which reads the posture fields the rule declares."""
        if self._exposures is None:
            self._exposures = build_exposure_model(self.snapshot, self._config, self._full_posture)
        return self._exposures

    # --- Cilium settings ------------------------------------------------------------------

    @property
    def settings_known(self) -> bool:
        """Whether the agent's settings are known (a cilium-config ConfigMap or complete Helm values):
        only then does an absent key mean "Cilium's default"."""
        self._unambiguous()
        return self._config.settings_known

    def require_settings(self, *, unknown_because: str) -> None:
        """Raise NotRun("<unknown_because>: why") unless the agent's settings are known."""
        self._unambiguous()
        if not self._config.settings_known:
            notes = f"; {'; '.join(self._config.notes)}" if self._config.notes else ""
            raise NotRun(f"{unknown_because}: {NO_CONFIG}{notes}")

    def setting(self, key: str, *, unknown_because: str) -> Setting | None:
        """The setting of `key` as the agent applies it; None when absent, i.e. Cilium's default.

        Raises NotRun("<unknown_because>: why") when the input cannot tell: it shows
        no complete Cilium configuration, or the value is one it does not resolve
        (a `${VAR}` substitution).
        """
        self._check_declared(key)
        self.require_settings(unknown_because=unknown_because)
        return self._resolved(key, unknown_because)

    def setting_enabled(self, key: str, *, unknown_because: str) -> bool:
        """A boolean switch, off when absent (Cilium's default); NotRun as `setting` when unknown."""
        setting = self.setting(key, unknown_because=unknown_because)
        return setting is not None and setting.as_bool()

    def setting_if_set(self, key: str, *, unknown_because: str) -> Setting | None:
        """The setting when the input sets `key`, None when it does not, whether or not the rest of the
        configuration is known; NotRun when the value is one the input does not resolve."""
        self._check_declared(key)
        return self._resolved(key, unknown_because)

    def concrete_setting(self, key: str) -> Setting | None:
        """The setting when the input sets `key` to a resolved value, else None (never NotRun)."""
        self._check_declared(key)
        setting = self._config.get(key)
        return setting if setting is not None and setting.concrete else None

    def setting_sources(self, key: str) -> list[Setting]:
        """Every source that sets `key`, highest precedence first (the first is in effect)."""
        self._check_declared(key)
        return self._config.sources_of(key)

    def shadowed_settings(self, key: str) -> list[Setting]:
        """Lower-precedence sources setting `key` to another value than the one in effect."""
        self._check_declared(key)
        return self._config.shadowed(key)

    def describe_setting(self, key: str, default: str) -> str:
        """`k8s-client-qps=50 (from ...)` or `k8s-client-qps not set (default 10)`."""
        self._check_declared(key)
        setting = self._config.get(key)
        return setting.describe(key) if setting is not None else f"{key} not set (default {default})"

    def describe_configuration(self) -> str:
        """The sources the configuration was read from, for messages (`ConfigMap kube-system/cilium-config`)."""
        self._unambiguous()
        return self._config.describe_sources()

    def agent_version(self) -> Setting | None:
        """The agent version setting (image tag, Helm image, chart version) when resolved, else None."""
        return self.concrete_setting(keys.AGENT_VERSION)

    def target_cilium_version(self) -> tuple[Version, str]:
        """The Cilium version to judge against, and how it is known: the agent's when the input
        shows it, else the posture's line (expected.ciliumVersionLine)."""
        setting = self.agent_version()
        version = setting.as_version() if setting is not None else None
        if setting is not None and version is not None:
            return version, f"Cilium {setting.value} ({setting.origin})"
        line = self.posture.cilium_version_line
        return (
            parse_version(line) or _FALLBACK_LINE,
            f"Cilium {line} (posture ciliumVersionLine; the input shows no agent version)",
        )

    # --- where findings about the configuration point --------------------------------------

    def configuration_anchor(self, setting: Setting | None = None) -> Anchor:
        """Where a finding about `setting` points: the object or values file that set it, else the
        main configuration source; NotRun when the input shows no configuration at all."""
        self._unambiguous()
        anchor = self._config.anchor_of(setting)
        if anchor is None:
            raise NotRun(NO_CONFIG)
        return anchor

    def examined_configuration(self, setting: Setting | None = None) -> None:
        """Record that the Cilium configuration was checked (a verdict on a setting, even when it reads
        "off, so nothing to judge"): the object or values file of `configuration_anchor(setting)`."""
        self.examined(self.configuration_anchor(setting)[0])

    def configuration_finding(self, message: str, setting: Setting | None = None,
                              severity: Severity | None = None) -> Finding:
        """A finding about the Cilium configuration, pointing at `configuration_anchor(setting)`."""
        ref, source = self.configuration_anchor(setting)
        return Finding(object=ref, message=message, source=source, severity=severity)

    # --- the objects the configuration was read from ---------------------------------------

    @property
    def cilium_namespace(self) -> str:
        """The namespace Cilium runs in: cilium-config's or the agent's, else kube-system."""
        self._unambiguous()
        return self._config.namespace

    @property
    def cilium_config_map(self) -> K8sObject | None:
        """The cilium-config ConfigMap the configuration was read from, if the input holds it."""
        self._unambiguous()
        return self._config.config_map

    @property
    def cilium_agent(self) -> K8sObject | None:
        """The agent DaemonSet (cilium), if the input holds it."""
        self._unambiguous()
        return self._config.agent

    @property
    def helm_values(self) -> tuple[HelmValues, ...]:
        """The Cilium Helm values read (values files, HelmReleases, Applications), highest precedence first."""
        self._unambiguous()
        return tuple(self._config.helm)

    def agent_takes_env_from_elsewhere(self) -> bool:
        """Whether the agent container takes environment from `envFrom`, which the input does not show."""
        from auditor.cilium.config import agent_env_from

        self._unambiguous()
        return self._config.agent is not None and agent_env_from(self._config.agent)

    # --- internals --------------------------------------------------------------------------

    def _resolved(self, key: str, unknown_because: str) -> Setting | None:
        setting = self._config.get(key)
        if setting is not None and not setting.concrete:
            raise NotRun(
                f"{unknown_because}: {key} is {setting.value!r} ({setting.origin}), a value the input does not resolve"
            )
        return setting

    def _unambiguous(self) -> None:
        """NotRun when the scope holds two different Cilium configurations: a rule never picks one."""
        if self._config.ambiguous is not None:
            raise NotRun(self._config.ambiguous)

    def _check_declared(self, key: str) -> None:
        self._unambiguous()
        if self._declared is not None and key not in self._declared:
            raise UndeclaredRead(
                f"rule {self._rule_id} reads the Cilium setting {key!r} without declaring it in cilium_settings"
            )


def unmet_requirement(snapshot: Snapshot, rule: Rule) -> tuple[CoverageState, str] | None:
    """Why `rule` cannot run on `snapshot`, or None when its data is there.

    A failed read of any kind the rule reads is an error (the rule might have
    reached another verdict with it); a requirement none of whose kinds is
    known makes the rule not-run.
    """
    for gk in rule.kinds_read():
        coverage = snapshot.coverage(gk)
        if coverage.state is CoverageState.FAILED:
            return CoverageState.FAILED, coverage.reason or f"reading {gk} failed"
    for requirement in rule.requirements():
        if snapshot.cilium_values and requirement == CILIUM_CONFIGURATION:
            continue  # a values file given beside the input shows the Cilium configuration
        if not any(snapshot.coverage(gk).state.known for gk in requirement):
            if len(requirement) == 1:
                reason = snapshot.coverage(requirement[0]).reason
            else:
                reason = f"the input holds none of {', '.join(requirement)}"
            return CoverageState.MISSING, reason
    return None
