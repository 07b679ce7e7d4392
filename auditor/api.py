"""The rule API: the one module a rule plugin imports from.

Everything a rule needs is here: the base class and its metadata types, the
context it reads the Cilium configuration and the posture through, the object
model and the pure helpers for reading hostile input. The built-in rules import
nothing else from the auditor (an import-linter contract checks it), so what
they can do, a plugin can do too. docs/plugins.md shows a complete plugin.

    from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, kinds

`exposure` is the exposure model (auditor/exposure/): every way in from outside
the cluster, built once per snapshot and read as `ctx.exposures`.
"""

from __future__ import annotations

from auditor import exposure, kinds
from auditor.cilium import keys as cilium_keys
from auditor.cilium.config import Setting
from auditor.cilium.helm_values import HelmValues
from auditor.model import (
    Finding,
    K8sObject,
    ObjectRef,
    Severity,
    Source,
    as_list,
    as_mapping,
    as_str,
    conditions,
    crd_served_versions,
    is_placeholder,
    string_labels,
)
from auditor.posture import Posture, UndeclaredRead
from auditor.rule import CILIUM_CONFIGURATION, AnyOf, Fact, NotRun, Requirement, Rule, RuleContext
from auditor.selectors import is_empty_selector, selector_matches, strip_source
from auditor.snapshot import CoverageState, Snapshot, SnapshotMode
from auditor.versions import Version, image_name, image_tag_version, parse_version, version_line

__all__ = [
    "CILIUM_CONFIGURATION",
    "AnyOf",
    "CoverageState",
    "Fact",
    "Finding",
    "HelmValues",
    "K8sObject",
    "NotRun",
    "ObjectRef",
    "Posture",
    "Requirement",
    "Rule",
    "RuleContext",
    "Setting",
    "Severity",
    "Snapshot",
    "SnapshotMode",
    "Source",
    "UndeclaredRead",
    "Version",
    "as_list",
    "as_mapping",
    "as_str",
    "cilium_keys",
    "conditions",
    "crd_served_versions",
    "exposure",
    "image_name",
    "image_tag_version",
    "is_empty_selector",
    "is_placeholder",
    "kinds",
    "parse_version",
    "selector_matches",
    "string_labels",
    "strip_source",
    "version_line",
]
