"""`audit exposure` and `audit trace` in a configured repository (docs/config.md): they find and apply
`.cilium-audit.yaml` as `audit` does (discovery, --config, AUDIT_CONFIG, precedence), through the real CLI on
real fixture trees: paths, exclude, clusters, posture, merged exception files, rules, severities and the gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, one_line_error
from tests.test_live_fixtures import kubeconfig, run, serve

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
TWO_SITES = FIXTURES / "gitops" / "two-sites"
TRACE = FIXTURES / "trace"
AS_OF = ("--as-of", "2026-12-01")
WIDE = {"COLUMNS": "400"}

POSTURE = "exposure:\n  mode: gateway\n  lbIpamL2: true\n  approvedLbIpamRanges: [192.168.67.240-192.168.67.247]\n"
ENTRY = ("  - name: {name}\n    rules: [{rule}]\n    match: {{kind: Service, namespace: web, name: web}}\n"
         "    reason: {reason}\n")


def _repo(tmp_path: Path, config: str | None, tree: Path = TWO_SITES, name: str = "repo",
          files: dict[str, str] | None = None) -> Path:
    """A copy of `tree` as a repository (its root holds `.git`, where discovery stops), with `config` as its
    `.cilium-audit.yaml` (None: no file) and `files` beside it."""
    repo = tmp_path / name
    shutil.copytree(tree, repo)
    (repo / ".git").mkdir()
    if config is not None:
        (repo / ".cilium-audit.yaml").write_text(config, encoding="utf-8")
    for relative, text in (files or {}).items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text, encoding="utf-8")
    return repo


def _json(result: CliResult) -> dict[str, Any]:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["summary"]["exitCode"] == result.code, (result.code, result.stderr)
    return data




def _flat(text: str) -> str:
    return " ".join(text.split())


# --- the configured run is the run its flags describe -------------------------------------------------


FILES = {"policy/posture.yaml": POSTURE,
         "policy/exceptions.yaml": "exceptions:\n" + ENTRY.format(name="lab-web", rule="lb-service-not-excepted",
                                                                   reason="The lab's own web server.")}
CONFIG = ("paths: [.]\nclusters:\n  lab: clusters/lab\nposture: policy/posture.yaml\n"
          "exceptions: [policy/exceptions.yaml]\nfailOn: warning\n")
FLAGS = (".", "--cluster", "lab=clusters/lab", "--posture", "policy/posture.yaml", "--exceptions",
         "policy/exceptions.yaml", "--fail-on", "warning")


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the two-sites tree configured by CONFIG, the same tree with no configuration file)."""
    folder = tmp_path_factory.mktemp("equivalent")
    return _repo(folder, CONFIG, files=FILES), _repo(folder, None, name="bare", files=FILES)


def test_exposure_with_no_flag_gives_the_ways_in_and_verdicts_of_the_equivalent_flags(
        repos: tuple[Path, Path]) -> None:
    configured, bare = repos
    by_file = _json(run("exposure", "-o", "json", *AS_OF, cwd=configured))
    by_flags = _json(run("exposure", *FLAGS, "-o", "json", *AS_OF, cwd=bare))
    assert by_file["exposures"] == by_flags["exposures"] and by_file["summary"] == by_flags["summary"]
    assert by_file["target"] == by_flags["target"] and by_file["sources"] == by_flags["sources"]
    # What the file says took effect: the lab cluster only, its posture, its exception, its gate.
    assert {way["cluster"] for way in by_file["exposures"]} == {"lab"}
    assert by_file["summary"]["failOn"] == "warning"
    verdicts = {(way["channel"], way["subject"]["object"]["name"]): way["verdict"]["status"]
                for way in by_file["exposures"]}
    assert verdicts[("load-balancer", "web")] == "excepted"
    assert by_file["sources"]["posture"]["file"] == "policy/posture.yaml"
    # The text report is the same bytes, whichever way the run was described.
    assert run("exposure", *AS_OF, cwd=configured, env=WIDE).stdout == run(
        "exposure", *FLAGS, *AS_OF, cwd=bare, env=WIDE).stdout


def test_trace_with_no_path_traces_the_configured_paths_as_the_equivalent_flags(repos: tuple[Path, Path]) -> None:
    configured, bare = repos
    by_file = run("trace", "Service/web/web", "-o", "json", *AS_OF, cwd=configured)
    by_flags = run("trace", "Service/web/web", *FLAGS[:-2], "-o", "json", *AS_OF, cwd=bare)
    assert by_file.code == by_flags.code == 0, (by_file.stderr, by_flags.stderr)
    assert _json(by_file) == _json(by_flags)
    chains = _json(by_file)["chains"]
    assert [chain["title"].split(":")[0] for chain in chains] == ["lab", "lab"]
    assert {chain["way"]["verdict"]["status"] for chain in chains} == {"excepted"}


def test_the_file_is_found_by_walking_up_by_config_and_by_audit_config(repos: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    configured, _ = repos
    expected = run("exposure", "-o", "json", *AS_OF, cwd=configured)
    # From a folder below the file: discovery walks up; the file's paths are relative to its own folder.
    below = run("exposure", "-o", "json", *AS_OF, cwd=configured / "apps" / "web")
    assert below.code == expected.code and _json(below)["summary"] == _json(expected)["summary"]
    for how in (("--config", str(configured / ".cilium-audit.yaml")),):
        named = run("exposure", *how, "-o", "json", *AS_OF, cwd=tmp_path)
        assert _json(named)["summary"] == _json(expected)["summary"]
    by_env = run("trace", "Service/web/web", "-o", "json", *AS_OF, cwd=tmp_path,
                 env={"AUDIT_CONFIG": str(configured / ".cilium-audit.yaml")})
    assert by_env.code == 0 and _json(by_env)["sources"]["posture"]["file"].endswith("policy/posture.yaml")
    # A command-line option still wins over the file: --fail-on, PATH.
    relaxed = _json(run("exposure", "--fail-on", "error", "-o", "json", *AS_OF, cwd=configured))
    assert relaxed["summary"]["failOn"] == "error"
    one_file = _json(run("exposure", "apps/web/service.yaml", "-o", "json", *AS_OF, cwd=configured))
    assert one_file["target"]["inputs"] == ["apps/web/service.yaml"]


# --- exclude and clusters ------------------------------------------------------------------------------


def test_exclude_is_respected_by_exposure_and_trace(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "exclude: [apps/web/service.yaml]\n")
    ways = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))["exposures"]
    assert ways and not [way for way in ways if way["subject"]["object"]["name"] == "web"]
    assert not [way for way in ways if "apps/web/service.yaml" in way["evidence"]["file"]]
    # The Service the file excludes is not in the input: an unknown target (exit 2) with the closest known ones.
    traced = run("trace", "Service/web/web", *AS_OF, cwd=repo)
    line = one_line_error(traced)
    assert "unknown target 'Service/web/web': the input holds no such Service" in line
    # Without the file, the same tree has the Service in both clusters.
    (repo / ".cilium-audit.yaml").unlink()
    assert run("trace", "Service/web/web", ".", *AS_OF, cwd=repo).code == 1


@pytest.mark.parametrize("clusters, code, named", [
    ("  lab: clusters/lab\n", 0, ["lab", "lab"]),
    ("  edge: clusters/edge\n", 1, ["edge", "edge"]),
    (None, 1, ["edge", "edge", "lab", "lab"]),
])
def test_clusters_are_respected_and_a_tree_is_traced_in_each(tmp_path: Path, clusters: str | None, code: int,
                                                              named: list[str]) -> None:
    repo = _repo(tmp_path, "paths: [.]\n" + (f"clusters:\n{clusters}" if clusters else ""))
    traced = run("trace", "Service/web/web", "-o", "json", *AS_OF, cwd=repo)
    assert traced.code == code, traced.stderr
    chains = _json(traced)["chains"]
    assert [chain["title"].split(":")[0] for chain in chains] == named
    assert [chain["way"]["cluster"] for chain in chains] == named
    ways = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))["exposures"]
    assert sorted({way["cluster"] for way in ways}) == sorted(set(named))
    if clusters is None:  # the edge cluster's pool does not hold the address: broken there, whole in the lab
        first = _json(traced)["summary"]["firstBroken"]
        assert (first["chain"], first["hop"]) == (1, "announcement")
        assert [chain["status"] for chain in chains] == ["broken", "whole", "whole", "whole"]


# --- exceptions from two files -------------------------------------------------------------------------


def test_exceptions_from_two_files_keep_their_own_file_and_line_in_the_exposure_verdicts(tmp_path: Path) -> None:
    files = {
        "policy/load-balancers.yaml": "exceptions:\n" + ENTRY.format(
            name="web-lb", rule="lb-service-not-excepted", reason="Published by the LAN's DNS."),
        "teams/cilium/hubble.yaml": "# the Cilium team's own list\n\nexceptions:\n" + ENTRY.format(
            name="hubble-ui", rule="lb-service-not-excepted", reason="Hubble UI for the lab's operators.").replace(
            "kind: Service, namespace: web, name: web", "kind: HelmRelease, namespace: kube-system, name: cilium"),
    }
    config = "clusters:\n  lab: clusters/lab\nexceptions: [policy/load-balancers.yaml, teams/cilium/hubble.yaml]\n"
    repo = _repo(tmp_path, config, files=files)
    text = run("exposure", *AS_OF, cwd=repo, env=WIDE)
    assert text.code == 0, text.stdout  # every way in is excepted, by one file or the other
    flat = _flat(text.stdout)
    assert "excepted by web-lb (policy/load-balancers.yaml:2): Published by the LAN's DNS." in flat
    assert "excepted by hubble-ui (teams/cilium/hubble.yaml:4): Hubble UI for the lab's operators." in flat
    narrow = _flat(run("exposure", *AS_OF, cwd=repo, env={"COLUMNS": "80"}).stdout)
    assert "verdict excepted by hubble-ui (teams/cilium/hubble.yaml:4): Hubble UI" in narrow
    data = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    by = {way["subject"]["object"]["kind"]: way["verdict"].get("by") for way in data["exposures"]}
    assert by == {"Service": "web-lb", "HelmRelease": "hubble-ui"}
    assert data["sources"]["exceptions"]["file"] == "policy/load-balancers.yaml, teams/cilium/hubble.yaml"
    # The audit's JSON report names each entry's own file and line too.
    report = json.loads(run("-o", "json", *AS_OF, cwd=repo).stdout)
    assert {(e["name"], e["file"], e["line"]) for e in report["exceptions"]} == {
        ("web-lb", "policy/load-balancers.yaml", 2), ("hubble-ui", "teams/cilium/hubble.yaml", 4)}
    # The trace of the Service names the same verdict.
    chains = _json(run("trace", "Service/web/web", "-o", "json", *AS_OF, cwd=repo))["chains"]
    assert [chain["way"]["verdict"].get("by") for chain in chains] == ["web-lb", "web-lb"]
    traced = _flat(run("trace", "Service/web/web", *AS_OF, cwd=repo, env=WIDE).stdout)
    assert traced.count("way in: excepted by web-lb (policy/load-balancers.yaml:2): Published by the LAN's DNS.") == 2


# --- rules, severities and the gate --------------------------------------------------------------------


def test_rule_selection_severities_and_the_gate_decide_the_exposure_verdict(tmp_path: Path) -> None:
    base = "clusters:\n  lab: clusters/lab\n"
    repo = _repo(tmp_path, base)
    assert run("exposure", *AS_OF, cwd=repo).code == 1  # drift at error
    (repo / ".cilium-audit.yaml").write_text(base + "severity:\n  lb-service-not-excepted: warning\n"
                                             "  nodeport-service-not-excepted: warning\n")
    lowered = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    assert lowered["summary"]["drift"] == 4 and lowered["summary"]["failing"] == 0 and lowered["summary"][
        "exitCode"] == 0
    (repo / ".cilium-audit.yaml").write_text(base + "severity:\n  lb-service-not-excepted: warning\n"
                                             "  nodeport-service-not-excepted: warning\nfailOn: warning\n")
    assert _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))["summary"]["failing"] == 4
    (repo / ".cilium-audit.yaml").write_text(base + "rules:\n  skip: [lb-service-not-excepted]\n")
    skipped = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    flagged = _json(run("exposure", ".", "--cluster", "lab=clusters/lab", "--skip-rule", "lb-service-not-excepted",
                        "-o", "json", *AS_OF, cwd=repo))
    assert skipped["summary"] == flagged["summary"] and skipped["summary"]["exitCode"] == 3
    assert skipped["summary"]["unjudged"] == 4
    assert "rule lb-service-not-excepted was not selected" in skipped["summary"]["notJudged"]
    # The trace draws the same chains, the ways in unjudged; its exit code is the chain's, not the gate's.
    traced = run("trace", "Service/web/web", "-o", "json", *AS_OF, cwd=repo)
    assert traced.code == 0
    assert {chain["way"]["verdict"]["status"] for chain in _json(traced)["chains"]} == {"unjudged"}


def test_require_complete_with_not_applicable_rules_decides_the_exposure_exit_code(tmp_path: Path) -> None:
    """A tree whose workloads Helm renders elsewhere: the hostPort and hostNetwork rules cannot run. With
    requireComplete that is incomplete (exit 3) unless the file declares them not applicable here."""
    service = ("apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
               "spec: {type: ClusterIP, ports: [{port: 25}]}\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "mail.yaml").write_text(service, encoding="utf-8")
    (repo / ".cilium-audit.yaml").write_text("requireComplete: true\n", encoding="utf-8")
    strict = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    assert strict["summary"]["exitCode"] == 3 and len(strict["summary"]["notJudged"]) == 2
    (repo / ".cilium-audit.yaml").write_text(
        "requireComplete:\n  enabled: true\n  notApplicable:\n"
        "    hostport-not-excepted: workloads are rendered by Helm in CI\n"
        "    hostnetwork-pod-not-excepted: workloads are rendered by Helm in CI\n", encoding="utf-8")
    declared = run("exposure", "-o", "json", *AS_OF, cwd=repo)
    summary = _json(declared)["summary"]
    assert declared.code == 0 and summary["notJudged"] == []
    assert [why.split(":")[0] for why in summary["notChecked"]] == [
        "rule hostport-not-excepted is not-applicable", "rule hostnetwork-pod-not-excepted is not-applicable"]
    assert "(.cilium-audit.yaml:4)" in summary["notChecked"][0]
    text = run("exposure", *AS_OF, cwd=repo)
    assert text.code == 0 and "the rules declared not applicable here did not run" in _flat(text.stdout)
    # --no-require-complete on the command line still wins over the file.
    assert run("exposure", "--no-require-complete", *AS_OF, cwd=repo).code == 0


def test_a_partial_verdict_is_incomplete_with_require_complete_unless_its_gap_is_declared(tmp_path: Path) -> None:
    """The lab's Cilium HelmRelease alone: its values declare a LoadBalancer (Hubble UI), so
    lb-service-not-excepted reports drift without seeing any Service object (partial), as audits count it."""
    repo = _repo(tmp_path, "paths: [infra/lab]\nrequireComplete: true\n")
    strict = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    assert strict["summary"]["exitCode"] == 3 and strict["summary"]["drift"] == 2
    assert ("rule lb-service-not-excepted did not see: Service objects (the input holds no Service objects)"
            in strict["summary"]["notJudged"])
    assert _json(run("exposure", "--no-require-complete", "-o", "json", *AS_OF, cwd=repo))["summary"]["exitCode"] == 1
    reason = "Services are rendered by Helm in CI"
    declared = "".join(f"    {rule}: {reason}\n" for rule in (
        "lb-service-not-excepted", "nodeport-service-not-excepted", "service-external-ips", "hostport-not-excepted",
        "hostnetwork-pod-not-excepted"))
    (repo / ".cilium-audit.yaml").write_text(
        f"paths: [infra/lab]\nrequireComplete:\n  enabled: true\n  notApplicable:\n{declared}", encoding="utf-8")
    gated = _json(run("exposure", "-o", "json", *AS_OF, cwd=repo))
    assert gated["summary"]["notJudged"] == [] and gated["summary"]["exitCode"] == 1  # the drift still fails


def test_a_file_that_could_not_be_read_makes_exposure_incomplete_as_an_audit() -> None:
    """Fail closed: the file not read may hold a way in (an audit of the same tree exits 3 too)."""
    tree = str(FIXTURES / "broken-tree")
    audit = run(tree, "-o", "json", *AS_OF)
    listed = run("exposure", tree, "-o", "json", *AS_OF)
    assert listed.code == audit.code == 3
    (why,) = _json(listed)["summary"]["notJudged"]
    assert why.endswith("broken-tree/apps/web/web.yaml:28: not read (duplicate key 'image' (first at line 26)): "
                        "it may hold a way in")


# --- trace exit codes, unchanged -----------------------------------------------------------------------


@pytest.mark.parametrize("folders, target, code", [
    (("common", "gateway", "app"), "argocd.cluster.lan", 0),
    (("common", "gateway", "route-section-name"), "argocd.cluster.lan", 1),
    (("common", "certificate-unseen", "app"), "argocd.cluster.lan", 3),
])
def test_trace_exit_codes_are_those_of_the_same_paths_given_on_the_command_line(
        tmp_path: Path, folders: tuple[str, ...], target: str, code: int) -> None:
    repo = _repo(tmp_path, f"paths: [{', '.join(folders)}]\n", tree=TRACE)
    configured = run("trace", target, "-o", "json", *AS_OF, cwd=repo)
    given = run("trace", target, *folders, "-o", "json", *AS_OF, cwd=repo)
    assert configured.code == given.code == code, (configured.stderr, given.stderr)
    assert _json(configured) == _json(given)
    unknown = one_line_error(run("trace", "argocd.cluster.lam", *AS_OF, cwd=repo))
    assert "unknown target 'argocd.cluster.lam'" in unknown and "closest known targets: argocd.cluster.lan" in unknown


# --- a broken configuration file -----------------------------------------------------------------------


@pytest.mark.parametrize("config, expected", [
    ("a: [\n", ".cilium-audit.yaml:2: config: invalid YAML"),
    ("rules:\n  skip: [lb-pool-conflct]\n",
     ".cilium-audit.yaml:2: config: rules.skip[0]: unknown rule 'lb-pool-conflct' (did you mean 'lb-pool-conflict'?)"),
    ("failOn: fatal\n", ".cilium-audit.yaml:1: config: failOn: 'fatal' is not one of"),
    ("exceptions: [missing.yaml]\n", "missing.yaml: cannot read exception list"),
])
@pytest.mark.parametrize("command", [
    ("exposure",), ("exposure", "."), ("exposure", "--live"), ("trace", "Service/web/web"),
    ("trace", "Service/web/web", "."), ("trace", "Service/web/web", "--live"),
], ids=" ".join)
def test_a_broken_file_is_a_one_line_error_for_both_commands(tmp_path: Path, config: str, expected: str,
                                                             command: tuple[str, ...]) -> None:
    repo = _repo(tmp_path, config)
    line = one_line_error(run(*command, *AS_OF, cwd=repo))
    assert expected in line, line


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    for command in (("exposure",), ("trace", "Service/web/web")):
        line = one_line_error(run(*command, "--config", str(tmp_path / "none.yaml"), cwd=tmp_path))
        assert line.endswith("none.yaml: config: no such file (chosen by flag --config)"), line
        line = one_line_error(run(*command, cwd=tmp_path, env={"AUDIT_CONFIG": str(tmp_path / "none.yaml")}))
        assert line.endswith("(chosen by env AUDIT_CONFIG)"), line


def test_without_a_file_or_path_the_commands_ask_for_one(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    for command in (("exposure",), ("trace", "Service/web/web")):
        result = run(*command, cwd=tmp_path)
        assert result.code == 2 and "give PATH... (offline input, or a .cilium-audit.yaml" in result.stderr


# --- live: the posture, exceptions and rules of the file; no paths -------------------------------------


def test_live_exposure_and_trace_apply_the_file_but_not_its_paths(tmp_path: Path) -> None:
    exceptions = "exceptions:\n" + "".join(
        f"  - name: all-{rule}\n    rules: [{rule}]\n    match: {{kind: '*'}}\n    reason: Lab, open on purpose.\n"
        for rule in ("lb-service-not-excepted", "nodeport-service-not-excepted"))
    repo = _repo(tmp_path, "paths: [does-not-matter-live]\nexclude: ['**']\nexceptions: [lab-exceptions.yaml]\n",
                 files={"lab-exceptions.yaml": exceptions})
    with serve("drifted") as server:
        config = kubeconfig(server, tmp_path)
        listed = run("exposure", "--live", "--kubeconfig", config, "-o", "json", *AS_OF, cwd=repo)
        bare = run("exposure", "--live", "--kubeconfig", config, "--exceptions", str(repo / "lab-exceptions.yaml"),
                   "-o", "json", *AS_OF, cwd=tmp_path)
        services = [way["subject"]["object"] for way in _json(listed)["exposures"]
                    if way["channel"] == "load-balancer" and way["verdict"]["status"] == "excepted"]
        assert services, listed.stdout
        service = services[0]
        traced = run("trace", f"Service/{service['namespace']}/{service['name']}", "--live", "--kubeconfig", config,
                     "-o", "json", *AS_OF, cwd=repo)
        assert {r.method for r in server.requests} == {"GET"}
    data = _json(listed)
    assert data["target"]["mode"] == "live"
    assert [w["verdict"] for w in data["exposures"]] == [w["verdict"] for w in _json(bare)["exposures"]]
    statuses = {w["verdict"]["status"] for w in data["exposures"]}
    assert "excepted" in statuses and "drift" not in statuses
    assert "Traceback" not in traced.stderr and traced.code in (0, 1, 3), traced.stderr
    assert "all-lb-service-not-excepted" in {chain["way"]["verdict"].get("by") for chain in _json(traced)["chains"]
                                             if chain["way"]}


# --- audit config: which commands use each key ---------------------------------------------------------


def test_audit_config_says_which_keys_some_commands_do_not_use(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "failOn: warning\n")
    settings = json.loads(run("config", "-o", "json", cwd=repo).stdout)
    assert "audit trace" in settings["failOn"]["notUsedBy"] and "audit live" in settings["paths"]["notUsedBy"]
    assert "notUsedBy" not in settings["posture"] and "notUsedBy" not in settings["exceptions"]
    assert "notUsedBy" not in settings["rules.skip"]
    text = run("config", cwd=repo).stdout
    assert "not used by every command:\n  paths, exclude, clusters: not by audit live, audit exposure --live" in text
    from auditor.project_config.effective import NOT_USED_BY

    doc = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    section = doc.split("## Which commands use each key", 1)[1].split("\n## ", 1)[0]
    for key in NOT_USED_BY:
        assert f"`{key}`" in section, key
