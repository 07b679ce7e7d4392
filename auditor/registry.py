"""Which rules exist: the built-in list plus plugins from an entry-point group.

Registration is explicit (`auditor_rules.BUILTIN_RULES`, and the
`cilium_auditor.rules` entry-point group for third-party packages), never by
globbing a folder or by import side effects. Rules are imported only when a
command needs them, and always returned sorted by id, so every run sees them
in the same order.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from auditor.errors import AuditError
from auditor.model import Severity
from auditor.posture import FIELDS as POSTURE_FIELDS
from auditor.rule import Rule

ENTRY_POINT_GROUP = "cilium_auditor.rules"
RULE_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that could not be loaded; reported as a rule in error."""

    id: str
    reason: str


def metadata_problems(rule_class: object) -> list[str]:
    """What is missing or malformed in a rule class's declarative metadata."""
    if not (isinstance(rule_class, type) and issubclass(rule_class, Rule)):
        return ["not a subclass of auditor.rule.Rule"]
    problems = _identity_problems(rule_class) + _text_problems(rule_class) + _declaration_problems(rule_class)
    if rule_class.check is Rule.check:
        problems.append("check() is not implemented")
    return problems


def _identity_problems(rule_class: type[Rule]) -> list[str]:
    problems = []
    rule_id = getattr(rule_class, "id", None)
    if not isinstance(rule_id, str) or not RULE_ID.match(rule_id):
        problems.append(f"id {rule_id!r} is not kebab-case")
    if not isinstance(getattr(rule_class, "severity", None), Severity):
        problems.append("severity is not an auditor.model.Severity")
    return problems


def _text_problems(rule_class: type[Rule]) -> list[str]:
    problems = []
    for name in ("title", "rationale", "remediation"):
        value = getattr(rule_class, name, None)
        if not isinstance(value, str) or not value.strip():
            hint = " (set rationale_fact and rationale_decision)" if name == "rationale" else ""
            problems.append(f"{name} is empty{hint}")
    title = getattr(rule_class, "title", "")
    if isinstance(title, str) and ("\n" in title.strip() or title.strip().endswith(".")):
        problems.append("title must be one line without a final period")
    remediation = getattr(rule_class, "remediation", "")
    if isinstance(remediation, str) and not remediation.strip().endswith("."):
        problems.append("remediation must end with a period")
    return problems


def _declaration_problems(rule_class: type[Rule]) -> list[str]:
    """`requires` (kinds, or AnyOf alternatives), `uses`, `cilium_settings`, `posture_fields`."""
    problems = []
    requires = getattr(rule_class, "requires", None)
    if not isinstance(requires, tuple) or not requires:
        problems.append("requires must name the kinds the rule needs")
    elif not all(isinstance(r, str) or (isinstance(r, tuple) and r and all(isinstance(k, str) for k in r))
                 for r in requires):
        problems.append("requires holds kinds (strings) or AnyOf(kind, ...) alternatives")
    for name in ("uses", "cilium_settings", "posture_fields"):
        value = getattr(rule_class, name, ())
        if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
            problems.append(f"{name} must be a tuple of strings")
    unknown = [f for f in getattr(rule_class, "posture_fields", ()) if f not in POSTURE_FIELDS]
    if unknown:
        problems.append(f"posture_fields names unknown posture field(s) {', '.join(map(str, unknown))} "
                        f"(known: {', '.join(POSTURE_FIELDS)})")
    return problems


def _import(spec: str) -> type[Rule]:
    module_name, _, attribute = spec.partition(":")
    loaded = getattr(importlib.import_module(module_name), attribute)
    if not (isinstance(loaded, type) and issubclass(loaded, Rule)):
        raise TypeError(f"{spec} is not an auditor.rule.Rule subclass")
    return loaded


def builtin_rule_classes() -> list[type[Rule]]:
    import auditor_rules

    return [_import(spec) for spec in auditor_rules.BUILTIN_RULES]


PLUGIN_LAYER = "plugin"


def rule_layer(rule: Rule | type[Rule]) -> str:
    """The layer a rule guards: its sub-package of `auditor_rules` (datapath, lbipam, ...), or "plugin"."""
    parts = (rule if isinstance(rule, type) else type(rule)).__module__.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "auditor_rules" else PLUGIN_LAYER


def builtin_layers() -> tuple[str, ...]:
    """The built-in rules' layers, in the order of the platform's chain (`auditor_rules.LAYERS`)."""
    import auditor_rules

    return tuple(auditor_rules.LAYERS)


def index_entry(rule: Rule) -> dict[str, Any]:
    """What `audit rules` shows of a rule (and rules/index.json holds for the built-in ones).

    `requires` lists one kind, or the alternatives of an AnyOf, per requirement;
    `reads` is every kind the rule reads (what `audit live --rule ID` lists).
    """
    return {
        "id": rule.id,
        "severity": rule.severity.value,
        "title": rule.title,
        "layer": rule_layer(rule),
        "requires": [list(r) if isinstance(r, tuple) else r for r in rule.requires],
        "uses": list(rule.uses),
        "ciliumSettings": list(rule.cilium_settings),
        "postureFields": list(rule.posture_fields),
        "reads": rule.kinds_read(),
    }


def builtin_index() -> list[dict[str, Any]]:
    """The built-in rules' metadata from rules/index.json, without importing them.

    Generated with the rule reference (python -m auditor.rule_docs --write) and
    checked fresh by the test suite; `audit rules` reads it so that listing the
    rules stays fast however many there are.
    """
    import json
    import os

    import auditor_rules

    # Opened as a file, not through importlib.resources (whose import was ~4 ms of every start-up).
    with open(os.path.join(os.path.dirname(os.path.abspath(auditor_rules.__file__)), "index.json"),
              encoding="utf-8") as file:
        entries: list[dict[str, Any]] = json.load(file)
    return entries


def plugin_rules() -> tuple[list[Rule], list[BrokenPlugin]]:
    """The plugins (entry points), loaded and checked.

    A plugin whose rule id is taken, or whose entry point is not named after
    its rule id, is reported under its entry point's name (made unique), so a
    report never lists two rules with one id and --skip-rule can name the
    broken plugin.
    """
    # Read even when no plugin is installed (a 28 KB file, ~0.1 ms): an installation whose own data
    # cannot be read is named at once, as a setup error (tests/test_hostile_input.py).
    builtin_ids = {entry["id"] for entry in builtin_index()}
    classes, broken = _plugin_rule_classes()
    rules: list[Rule] = []
    for entry_name, cls in classes:
        if cls.id in builtin_ids or any(rule.id == cls.id for rule in rules):
            problem = f"rule id {cls.id!r} is already taken"
        elif entry_name != cls.id:
            # `--rule`, exception lists and baselines name the rule id: an entry point
            # named otherwise is a typo or a rename, and `audit rules` would disagree with it.
            problem = f"entry point {entry_name!r} is not named after its rule id {cls.id!r}"
        else:
            rules.append(cls())
            continue
        taken = builtin_ids | {rule.id for rule in rules} | {plugin.id for plugin in broken}
        name = entry_name if entry_name not in taken else f"plugin:{entry_name}"
        broken.append(BrokenPlugin(name, f"plugin {entry_name}: {problem}"))
    return rules, broken


def _plugin_rule_classes() -> tuple[list[tuple[str, type[Rule]]], list[BrokenPlugin]]:
    """(entry-point name, rule class) of every plugin that loads, and the ones that do not."""
    classes: list[tuple[str, type[Rule]]] = []
    broken: list[BrokenPlugin] = []
    if not _group_may_be_declared():
        return classes, broken
    from importlib.metadata import entry_points

    for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        try:
            loaded = entry_point.load()
        except Exception as error:  # a plugin's import error must not crash the run
            reason = f"plugin {entry_point.value} failed to load: {type(error).__name__}: {error}"
            broken.append(BrokenPlugin(entry_point.name, reason))
            continue
        problems = metadata_problems(loaded)
        if problems:
            broken.append(BrokenPlugin(entry_point.name, f"plugin {entry_point.value}: {'; '.join(problems)}"))
        else:
            classes.append((entry_point.name, loaded))
    return classes, broken


def _group_may_be_declared() -> bool:
    """False only when no distribution on `sys.path` can declare an entry point of the plugin group.

    Importing importlib.metadata (it imports the email package) and reading every distribution's
    metadata were ~15 ms of each run's ~110 ms start-up, for a group nearly every installation leaves
    empty. This looks where importlib.metadata's path finder looks (the `*.dist-info` and
    `*.egg-info` folders of each `sys.path` folder) for an entry_points.txt naming the group; anything
    it cannot read as plainly (a zip or egg on the path, another metadata finder) answers True, and
    importlib.metadata decides as before.
    """
    import os
    import sys
    from importlib.machinery import PathFinder

    if any(finder is not PathFinder and hasattr(finder, "find_distributions") for finder in sys.meta_path):
        return True
    marker = ENTRY_POINT_GROUP.encode("ascii")
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            if os.path.exists(root):  # a zip file on the path: importlib.metadata reads inside it
                return True
            continue
        if root.lower().endswith(".egg"):
            return True
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if name.lower().endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(root, name, "entry_points.txt"), "rb") as file:
                        if marker in file.read():
                            return True
                except OSError:  # no entry points (or an egg-info file, which holds none)
                    continue
    return False


@dataclass
class RuleSet:
    """The rules a run loaded, and the plugins that failed to load (each an error result)."""

    rules: list[Rule]
    broken: list[BrokenPlugin]

    @property
    def ids(self) -> set[str]:
        return {rule.id for rule in self.rules}

    def by_id(self, rule_id: str) -> Rule | None:
        return next((rule for rule in self.rules if rule.id == rule_id), None)


def load_rules(plugins: bool = True) -> RuleSet:
    rules = [cls() for cls in builtin_rule_classes()]
    broken: list[BrokenPlugin] = []
    if plugins:
        plugin_list, broken = plugin_rules()
        rules += plugin_list
    return RuleSet(sorted(rules, key=lambda rule: rule.id), broken)


def select(rule_set: RuleSet, only: Iterable[str] = (), skip: Iterable[str] = ()) -> RuleSet:
    """Keep the rules named by `only` (all when empty), minus those in `skip`."""
    only, skip = list(only), list(skip)
    known = rule_set.ids | {plugin.id for plugin in rule_set.broken}
    for rule_id in only + skip:
        if rule_id not in known:
            raise AuditError(f"unknown rule {rule_id!r} (see `audit rules`)")
    keep = set(only) if only else known
    keep -= set(skip)
    return RuleSet(
        [rule for rule in rule_set.rules if rule.id in keep],
        [plugin for plugin in rule_set.broken if plugin.id in keep],
    )
