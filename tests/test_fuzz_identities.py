"""Property-based tests for objects that share one identity (issue 10, item 2).

Generated inputs: a few Services whose identities (namespace/name) collide at
random, each with or without the label the `gateway-services` exception
(tests/fixtures/gateway-services-exceptions.yaml) matches on, of a random type, spread over a few files of a folder,
as a base and its overlays would be. Through the real pipeline (folder
reader -> rules -> exception list -> every reporter), the properties:

- every definition is audited: one finding per exposed definition, at its own
  file and line;
- a finding is excepted exactly when *its own* object carries the label, never
  because a namesake does;
- every identity defined more than once is reported, with each definition, in
  the result and in every report format (and only those identities);
- a finding built without its labels (from a reference and a source) is
  matched on the object read where it points, and on nobody's labels when
  that does not single one object out.

Profiles as for tests/test_fuzz.py (`HYPOTHESIS_PROFILE=long` for thousands of examples).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from auditor import engine, exceptions_list, registry
from auditor.config_files import load_schema
from auditor.fleet import merge_fleet
from auditor.model import Finding, FindingStatus, ObjectRef, Source
from auditor.posture import Posture
from auditor.report import FORMATS, renderer
from auditor.snapshot import Snapshot
from auditor.sources.files import read_paths
from tests.conftest import AS_OF, FIXTURES

GATEWAY_LABEL = "gateway.networking.k8s.io/gateway-name"
RULES = ("lb-service-not-excepted", "nodeport-service-not-excepted")
EXPOSING = {"LoadBalancer": "lb-service-not-excepted", "NodePort": "nodeport-service-not-excepted"}
RULE_SET = registry.select(registry.load_rules(plugins=False), RULES)
EXCEPTIONS = exceptions_list.load(str(FIXTURES / "gateway-services-exceptions.yaml"))
REPORT_VALIDATOR = jsonschema.Draft202012Validator(load_schema("report.schema.json"),
                                                   format_checker=jsonschema.FormatChecker())


@dataclass(frozen=True)
class Definition:
    """One Service document: which identity, whether labelled, its type, and the file it is in."""

    namespace: str
    name: str
    labelled: bool
    service_type: str
    file: int
    other_labels: bool  # unrelated labels, so "has labels" never stands in for "has the label"

    def document(self) -> dict[str, Any]:
        labels: dict[str, str] = {"app.kubernetes.io/name": self.name} if self.other_labels else {}
        if self.labelled:
            labels[GATEWAY_LABEL] = "main"
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if labels:
            metadata["labels"] = labels
        return {"apiVersion": "v1", "kind": "Service", "metadata": metadata,
                "spec": {"type": self.service_type, "ports": [{"port": 80}]}}


DEFINITIONS = st.lists(
    st.builds(
        Definition,
        namespace=st.sampled_from(["app", "mail"]),
        name=st.sampled_from(["edge", "web", "smtp"]),
        labelled=st.booleans(),
        service_type=st.sampled_from(["LoadBalancer", "NodePort", "ClusterIP"]),
        file=st.integers(min_value=0, max_value=3),
        other_labels=st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="audit-identities-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def write_tree(workdir: Path, definitions: list[Definition]) -> tuple[Path, dict[Source, Definition]]:
    """The definitions as a folder of multi-document YAML files; where the reader will say each one is."""
    tree = Path(tempfile.mkdtemp(dir=workdir))
    where: dict[Source, Definition] = {}
    for file in sorted({d.file for d in definitions}):
        in_file = [d for d in definitions if d.file == file]
        path = tree / f"overlay-{file}" / "services.yaml"
        path.parent.mkdir()
        line, chunks = 1, []
        for definition in in_file:
            text = yaml.safe_dump(definition.document(), sort_keys=False)
            chunks.append(text)
            where[Source(str(path), line)] = definition
            line += text.count("\n") + 1  # the `---` separator
        path.write_text("---\n".join(chunks), encoding="utf-8")
    return tree, where


def audit(tree: Path) -> engine.AuditResult:
    snapshot = read_paths([str(tree)])
    return engine.run(snapshot, RULE_SET, EXCEPTIONS, Posture(), as_of=AS_OF)


@given(definitions=DEFINITIONS)
def test_each_definition_is_judged_on_its_own_labels(workdir: Path, definitions: list[Definition]) -> None:
    tree, where = write_tree(workdir, definitions)
    result = audit(tree)
    findings = {(f.rule, f.source): f for f in result.findings}
    expected = {(EXPOSING[d.service_type], source): d for source, d in where.items() if d.service_type in EXPOSING}
    assert set(findings) == set(expected), "one finding per exposed definition, at its own place"
    for key, definition in expected.items():
        finding = findings[key]
        assert (finding.status is FindingStatus.EXCEPTED) == definition.labelled, (finding, definition)
        if definition.labelled:
            assert finding.exception is not None and finding.exception.name == "gateway-services"
    shutil.rmtree(tree)


@given(definitions=DEFINITIONS)
def test_every_shared_identity_is_reported_in_every_format(workdir: Path, definitions: list[Definition]) -> None:
    tree, where = write_tree(workdir, definitions)
    result = audit(tree)
    by_identity: dict[tuple[str, str], set[Source]] = {}
    for source, definition in where.items():
        by_identity.setdefault((definition.namespace, definition.name), set()).add(source)
    shared = {identity: sources for identity, sources in by_identity.items() if len(sources) > 1}
    reported = {(d.object.namespace or "", d.object.name): d for d in result.duplicates}
    assert set(reported) == set(shared)
    for identity, duplicate in reported.items():
        assert set(duplicate.sources) == shared[identity] and duplicate.count == len(shared[identity])

    report = json.loads(renderer("json")(result))
    REPORT_VALIDATOR.validate(report)
    assert {(d["object"]["namespace"], d["object"]["name"]): {(x["file"], x["line"]) for x in d["definitions"]}
            for d in report["duplicateObjects"]} == {
        identity: {(s.path, s.line) for s in sources} for identity, sources in shared.items()}
    text = renderer("text")(result)
    junit = ET.fromstring(renderer("junit")(result))
    sarif = json.loads(renderer("sarif")(result))
    markdown = renderer("markdown")(result)
    notifications = [n for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
                     if n["descriptor"]["id"] == "duplicate-object"]
    input_cases = [c for c in junit.iter("testcase") if c.get("classname") == "(input)"]
    assert len(notifications) == len(input_cases) == len(shared)
    for namespace, name in shared:
        display = f"Service/{namespace}/{name}"
        assert f"warning: {display} is defined {len(shared[(namespace, name)])} times" in text
        assert f"`{display}`" in markdown
        assert any(display in n["message"]["text"] for n in notifications)
    for case in input_cases:
        assert case.find("skipped") is not None  # shown, never a failure: duplicates do not change the exit code
    assert all(f.get("classname") != "(input)" for f in junit.iter("failure"))
    assert len(shared) == 0 or "Objects defined more than once" in markdown
    assert result.exit_code == (1 if any(f.status is FindingStatus.FAILED for f in result.findings) else 0)
    shutil.rmtree(tree)


@given(definitions=DEFINITIONS)
def test_findings_without_labels_are_matched_on_the_object_they_point_at(workdir: Path,
                                                                        definitions: list[Definition]) -> None:
    """A rule may build a Finding from a reference and a source: the object read there is the one judged."""
    tree, where = write_tree(workdir, definitions)
    snapshot = read_paths([str(tree)])
    labels_of = exceptions_list.own_labels(snapshot)
    for source, definition in where.items():
        ref = ObjectRef("Service", definition.namespace, definition.name, "v1")
        labels = labels_of(Finding(object=ref, message="m", source=source))
        assert labels is not None and (GATEWAY_LABEL in labels) == definition.labelled
        namesakes = [s for s, d in where.items() if (d.namespace, d.name) == (definition.namespace, definition.name)]
        elsewhere = labels_of(Finding(object=ref, message="m", source=Source("nowhere.yaml", 1)))
        if len(namesakes) > 1:
            assert elsewhere is None, "several namesakes and no way to tell which: nobody's labels"
        else:
            assert elsewhere is not None and (GATEWAY_LABEL in elsewhere) == definition.labelled
    shutil.rmtree(tree)


@given(first=DEFINITIONS, second=DEFINITIONS)
def test_a_fleet_reports_each_clusters_duplicates_under_its_name(workdir: Path, first: list[Definition],
                                                                 second: list[Definition]) -> None:
    parts = []
    for name, definitions in (("lab", first), ("prod", second)):
        tree, _ = write_tree(workdir, definitions)
        parts.append((name, audit(tree)))
        shutil.rmtree(tree)
    merged = merge_fleet(parts, Snapshot.build([], mode="fleet"))
    expected = sorted((name, d.object.display, d.sources) for name, result in parts for d in result.duplicates)
    assert sorted((d.cluster, d.object.display, d.sources) for d in merged.duplicates) == expected
    report = json.loads(renderer("json")(merged))
    REPORT_VALIDATOR.validate(report)
    assert sorted(d["cluster"] for d in report["duplicateObjects"]) == sorted(name for name, _, _ in expected)
    for name in FORMATS:
        renderer(name)(merged)
