"""Issue 15: `audit live` of one cluster begins reading before the rules are loaded.

The lists to start first are guessed from rules/index.json; the rules are loaded while the first
answers are awaited, and what is read is what they read. These check, through the real CLI and
the real `kubernetes` client against tests/kubeapi, that the reports are those of the path that
loads the rules first (`--context X --context X`: one cluster, named twice, takes that path), that
the selection decides what is listed, and that a configuration error still wins over a cluster
one, as when the rules were loaded first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor import registry
from auditor.cli.common import AuditOptions
from auditor.cli.live import indexed_kinds
from auditor.rule import kinds_read_by
from tests.conftest import run_cli
from tests.kubeapi import KubeApiServer
from tests.test_live_fixtures import AS_OF, kubeconfig, run, serve
from tests.test_plugins import EXAMPLE, _pyproject, _write_dist_info
from tests.test_plugins import RULE_ID as PLUGIN_RULE
from tests.test_plugins import _env as plugin_env

RULE = "service-external-ips"


@pytest.fixture
def drifted() -> Iterator[KubeApiServer]:
    with serve("drifted") as server:
        yield server


def _options(only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> AuditOptions:
    return AuditOptions(output_format="json", output_files={}, exceptions_file=None, posture_file=None,
                        fail_on="error", require_complete=True, only_rules=only, skip_rules=skip, as_of=None,
                        color=None)


def test_the_guess_is_the_kinds_the_selected_built_in_rules_read() -> None:
    rules = registry.load_rules(plugins=False)
    assert indexed_kinds(_options()) == kinds_read_by(rules.rules)
    assert indexed_kinds(_options((RULE,))) == kinds_read_by(registry.select(rules, [RULE]).rules)
    skipped = registry.select(rules, skip=[RULE, "hubble-ui-exposed"]).rules
    assert indexed_kinds(_options(skip=(RULE, "hubble-ui-exposed"))) == kinds_read_by(skipped)
    assert indexed_kinds(_options(("no-such-rule",))) is None  # left to the path that loads the rules first


@pytest.mark.parametrize("selection", [(), ("--rule", RULE), ("--skip-rule", RULE, "--format", "sarif")])
def test_the_reports_are_those_of_loading_the_rules_first(drifted: KubeApiServer, tmp_path: Path,
                                                          selection: tuple[str, ...]) -> None:
    config = kubeconfig(drifted, tmp_path)
    context = drifted.write_kubeconfig(tmp_path / "probe").read_text().split("current-context:")[1].split()[0]
    early = run("live", "--kubeconfig", config, "--format", "json", *AS_OF, *selection)
    first = run("live", "--kubeconfig", config, "--format", "json", *AS_OF, *selection,
                "--context", context, "--context", context)
    assert early.code == first.code and early.stderr == first.stderr
    assert early.stdout == first.stdout and early.stdout


def test_a_selection_lists_only_what_its_rules_read(drifted: KubeApiServer, tmp_path: Path) -> None:
    result = run("live", "--kubeconfig", kubeconfig(drifted, tmp_path), "--format", "json", *AS_OF, "--rule", RULE)
    assert result.code in (0, 1), result.stderr
    listed = {r.path.rsplit("/", 1)[1] for r in drifted.requests if r.param("limit")}
    reads = set(kinds_read_by(registry.select(registry.load_rules(plugins=False), [RULE]).rules))
    served = {(f"{t.kind}.{t.group}" if t.group else t.kind): t.plural for t in drifted.registry.types}
    assert listed == {served[gk] for gk in reads if gk in served and not gk.startswith("CustomResourceDefinition")}
    assert "pods" not in listed and "secrets" not in listed  # no early list beyond the rule's kinds
    report = json.loads(result.stdout)
    assert [rule["id"] for rule in report["rules"]] == [RULE]


@pytest.mark.parametrize(("args", "expected"), [
    (("--exceptions", "/nonexistent/exceptions.yaml"), "cannot read exception list"),
    (("--baseline", "/nonexistent/previous.json"), "cannot read baseline"),
])
def test_a_configuration_error_comes_before_a_kubeconfig_error(tmp_path: Path, args: tuple[str, ...],
                                                               expected: str) -> None:
    result = run("live", "--kubeconfig", str(tmp_path / "missing-kubeconfig"), *args)
    assert result.code == 2 and expected in result.stderr and "kubeconfig" not in result.stderr, result.stderr


def test_a_configuration_error_comes_before_the_cluster_is_judged(drifted: KubeApiServer, tmp_path: Path) -> None:
    result = run("live", "--kubeconfig", kubeconfig(drifted, tmp_path), "--exceptions", str(tmp_path / "none.yaml"))
    assert result.code == 2 and "cannot read exception list" in result.stderr and result.stdout == ""


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin (tests/fixtures/plugin-example), installed as tests/test_plugins.py does
    without pip: its package and the `.dist-info` pip would write, in a folder for PYTHONPATH."""
    import shutil

    site = tmp_path_factory.mktemp("plugin-site")
    project = _pyproject()["project"]
    shutil.copytree(EXAMPLE / "acme_audit_rules", site / "acme_audit_rules")
    _write_dist_info(site, project["name"], project["version"], project["entry-points"]["cilium_auditor.rules"])
    return site


def test_a_plugin_rule_is_read_for_and_judged_as_when_the_rules_load_first(drifted: KubeApiServer, tmp_path: Path,
                                                                           plugin_site: Path) -> None:
    """rules/index.json knows only the built-in rules: a plugin's are loaded meanwhile, and what they
    read is read (the example plugin's LoadBalancer Services)."""
    config = kubeconfig(drifted, tmp_path)
    context = drifted.write_kubeconfig(tmp_path / "probe").read_text().split("current-context:")[1].split()[0]
    env = {**plugin_env(plugin_site), "KUBECONFIG": "", "EXPECT_CLUSTER": ""}
    early = run_cli("live", "--kubeconfig", config, "--format", "json", *AS_OF, env=env)
    first = run_cli("live", "--kubeconfig", config, "--format", "json", *AS_OF, "--context", context,
                    "--context", context, env=env)
    assert early.code == first.code and early.stdout == first.stdout, (early.stderr, first.stderr)
    (rule,) = [r for r in json.loads(early.stdout)["rules"] if r["id"] == PLUGIN_RULE]
    assert rule["status"] in ("passed", "failed") and rule["checked"] > 0
