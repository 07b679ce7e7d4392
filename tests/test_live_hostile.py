"""`audit live` against hostile servers, kubeconfigs and credential plugins (issue 10).

Every hostile behaviour is a fault mode of the test API server (tests/kubeapi/faults.py),
bounded in count (`times`) and in time (streaming faults stop when the client goes away,
and after `for_at_most` seconds at most), so a regression fails a test instead of hanging
it. Nothing here measures wall time: peak memory is the child's own `getrusage`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from auditor import kinds
from auditor.snapshot import CoverageState
from auditor.sources.live.client import MAX_DEPTH, RetryPolicy
from tests.conftest import ROOT, CliResult
from tests.kubeapi import Fault, KubeApiServer, KubeconfigContext, write_kubeconfig
from tests.test_fuzz import documents
from tests.test_live_fixtures import AS_OF, TOKEN, kubeconfig, live_json, run, run_subprocess, serve, statuses
from tests.test_live_reader import ALL_KINDS, read

FAST = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_cap=0.02, timeout=10)
ESC = "\x1b"
TITLE = "\x1b]0;owned\x07"  # an OSC sequence that sets the terminal's title
MIB = 1024 * 1024


def _services(server: KubeApiServer) -> list[Any]:
    return [r for r in server.requests if r.path == "/api/v1/services"]


def _reason(report: dict[str, Any], gk: str) -> str:
    return str({c["kind"]: c.get("reason", "") for c in report["coverage"]}[gk])


def _state(report: dict[str, Any], gk: str) -> str:
    return str({c["kind"]: c["state"] for c in report["coverage"]}[gk])


@pytest.fixture
def drifted() -> Iterator[KubeApiServer]:
    with serve("drifted") as server:
        yield server


def _no_control_characters(*texts: str) -> None:
    for text in texts:
        assert ESC not in text and "\x07" not in text and "\x9b" not in text, text[:500]


RSS_PROBE = textwrap.dedent("""
    import resource, sys
    from auditor.cli import main
    code = 0
    try:
        main(sys.argv[1:])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except MemoryError:
        code = 99
    print("PEAK_RSS_KIB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
    sys.exit(code)
""")
# Under 2 GiB of address space the old failures (2.4 GB, 4 GB) end at once as MemoryError
# instead of taking the machine down; a normal run needs far less.
ADDRESS_SPACE = 2 * 1024 * MIB


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# Linux carries a process's peak RSS across fork and exec: a child of this (large) pytest
# process would report at least this process's size. A small launcher in between gives the
# measured process a small parent, so its getrusage is its own.
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def run_measured(*args: str) -> tuple[CliResult, int]:
    """The CLI in a fresh process; its result and its own peak RSS in MiB."""
    env = {**os.environ, "NO_COLOR": "1", "KUBECONFIG": "", "EXPECT_CLUSTER": ""}
    env.pop("AUDIT_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-c", RSS_PROBE, *args],
                          capture_output=True, cwd=ROOT, env=env, timeout=300, preexec_fn=_limit_memory)
    stderr = done.stderr.decode()
    peak = [line for line in stderr.splitlines() if line.startswith("PEAK_RSS_KIB")]
    assert peak, stderr
    rest = "\n".join(line for line in stderr.splitlines() if not line.startswith("PEAK_RSS_KIB"))
    return CliResult(done.returncode, done.stdout.decode(), rest), int(peak[0].split()[1]) // 1024


# --- item 3: odd 200 answers are errors of that read, never "not served" or "empty" ----------------


STATUS_BODY = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200}


@pytest.mark.parametrize("body, what", [
    ({}, "an object without kind"),
    (STATUS_BODY, "a Status"),
    ([], "a JSON list"),
    ({"kind": "APIVersions", "versions": []}, "no API versions listed"),
    ({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": []},
     "no API versions listed"),
])
def test_odd_200_from_api_fails_every_core_kind(drifted: KubeApiServer, tmp_path: Path, body: Any, what: str) -> None:
    drifted.faults.add(Fault.answer(body, path=r"^/api$"))
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 3
    for gk in (kinds.SERVICE, kinds.NAMESPACE, kinds.SECRET, kinds.CONFIGMAP):
        assert _state(report, gk) == "failed"
        assert "discovery (/api)" in _reason(report, gk) and what in _reason(report, gk)
    assert statuses(report)["lb-service-not-excepted"] == "error"
    assert _state(report, kinds.LB_IP_POOL) == "listed"  # /apis was fine


@pytest.mark.parametrize("body", [{}, STATUS_BODY, {"kind": "APIGroupList", "groups": "none"}])
def test_odd_200_from_apis_fails_every_group_kind(drifted: KubeApiServer, tmp_path: Path, body: Any) -> None:
    drifted.faults.add(Fault.answer(body, path=r"^/apis$"))
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 3
    for gk in (kinds.LB_IP_POOL, kinds.DEPLOYMENT, kinds.GATEWAY, kinds.CRD, kinds.METALLB_IP_ADDRESS_POOL):
        assert _state(report, gk) == "failed", gk
        assert "discovery (/apis)" in _reason(report, gk)
    assert _state(report, kinds.SERVICE) == "listed"
    assert "passed" not in {statuses(report)[rule] for rule in ("metallb-leftover", "lb-pool-conflict")}


def test_odd_group_version_document_fails_its_group(tmp_path: Path) -> None:
    with serve("drifted", aggregated_discovery=False) as server:
        server.faults.add(Fault.answer(STATUS_BODY, path=r"^/apis/cilium\.io/v2$", times=None))
        snap = read(server, tmp_path).snapshot
    coverage = snap.coverage(kinds.LB_IP_POOL)
    assert coverage.state is CoverageState.FAILED and "discovery of cilium.io/v2" in coverage.reason
    assert "a Status, not APIResourceList" in coverage.reason


@pytest.mark.parametrize("body, what", [
    ({}, "an object without kind, not ServiceList"),
    (STATUS_BODY, "a Status, not ServiceList"),
    ({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": []}, "a NamespaceList, not ServiceList"),
    ({"kind": "ServiceList", "apiVersion": "v1", "metadata": {}}, "without an items list"),
    ({"kind": "ServiceList", "apiVersion": "v1", "metadata": {}, "items": None}, "without an items list"),
    ({"kind": "ServiceList", "apiVersion": "apps/v1", "metadata": {}, "items": []}, "apiVersion 'apps/v1'"),
    ({"kind": "ServiceList", "apiVersion": "v1", "metadata": {}, "items": [1]}, "items[0] of the ServiceList is "
                                                                                  "not an object"),
    ({"kind": "ServiceList", "apiVersion": "v1", "metadata": {}, "items": [{"spec": {}}]}, "without metadata"),
])
def test_a_list_answer_that_is_not_the_list_fails_the_kind(drifted: KubeApiServer, tmp_path: Path, body: Any,
                                                           what: str) -> None:
    drifted.faults.add(Fault.answer(body, resource="services"))
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 3
    assert _state(report, kinds.SERVICE) == "failed"
    assert _reason(report, kinds.SERVICE).startswith("Service: list services failed: unusable answer: ")
    assert what in _reason(report, kinds.SERVICE)
    assert statuses(report)["lb-service-not-excepted"] == "error"
    assert _state(report, kinds.NAMESPACE) == "listed"


def test_a_crd_answer_that_is_not_the_crd_fails_crds(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.answer(STATUS_BODY, path=r"customresourcedefinitions/ciliumloadbalancerippools"))
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 3 and _state(report, kinds.CRD) == "failed"
    assert "a Status, not the CustomResourceDefinition ciliumloadbalancerippools.cilium.io" in _reason(report,
                                                                                                      kinds.CRD)
    assert statuses(report)["lb-pool-v2alpha1"] == "error"


def test_a_crd_answer_whose_metadata_is_no_mapping_fails_crds(drifted: KubeApiServer, tmp_path: Path) -> None:
    """`metadata: [...]` in what claims to be the CRD: an unusable answer of that read, never an internal
    error (the name was looked up with `.get` on whatever `metadata` held)."""
    body = b'{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":["x"]}'
    drifted.faults.add(Fault.answer(body, path=r"customresourcedefinitions/ciliumloadbalancerippools"))
    code, report, result = live_json(drifted, tmp_path)
    assert code == 3 and "internal error" not in result.stderr and _state(report, kinds.CRD) == "failed"
    assert "not the CustomResourceDefinition ciliumloadbalancerippools.cilium.io" in _reason(report, kinds.CRD)


# --- item 11: a live answer too deep, or not text --------------------------------------------------


def _services_list_with(item_json: bytes) -> bytes:
    return b'{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[' + item_json + b"]}"


@pytest.mark.parametrize("item, what", [
    (b'{"metadata":{"name":"deep","namespace":"x"},"spec":' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"}",
     f"nested deeper than {MAX_DEPTH} levels"),
    (b'{"metadata":{"name":"deep","namespace":"x"},"spec":' + b"[" * 5000 + b"]" * 5000 + b"}",
     f"nested deeper than {MAX_DEPTH} levels"),
    (b'{"metadata":{"name":"s","namespace":"x","annotations":{"a":"\\ud800"}}}', "lone UTF-16 surrogate (\\ud800)"),
    (b'{"metadata":{"name":"s\xed\xa0\x80","namespace":"x"}}', "lone UTF-16 surrogate (\\ud800)"),
    (b'{"metadata":{"name":"s\xff","namespace":"x"}}', "not UTF-8 text"),
])
def test_an_answer_too_deep_or_not_text_fails_the_kind(drifted: KubeApiServer, tmp_path: Path, item: bytes,
                                                       what: str) -> None:
    drifted.faults.add(Fault.answer(_services_list_with(item), resource="services"))
    code, report, result = live_json(drifted, tmp_path)
    assert code == 3 and "internal error" not in result.stderr
    assert _state(report, kinds.SERVICE) == "failed" and what in _reason(report, kinds.SERVICE)
    assert len(_services(drifted)) == 1  # not retried: it would answer the same


# --- item 5: nothing is unbounded --------------------------------------------------------------------


def test_a_continue_chain_that_never_ends_stops_at_max_pages(drifted: KubeApiServer, tmp_path: Path) -> None:
    endless = Fault.endless_continue(resource="services", times=500)
    drifted.faults.add(endless)
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=4, max_pages=20, policy=FAST).snapshot
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED and "more than 20 pages (--max-pages)" in coverage.reason
    assert len(_services(drifted)) == 20 == endless.fired
    assert snap.of_kind(kinds.SERVICE) == []


def test_max_pages_counts_relists_too(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.expired(resource="services", times=None))
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=4, max_chunk_size=4, max_pages=3,
                max_relists=5, policy=FAST).snapshot
    assert "more than 3 pages" in snap.coverage(kinds.SERVICE).reason
    assert len(_services(drifted)) == 3


def test_a_repeated_continue_token_ends_the_list(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.repeated_continue(resource="services", times=50))
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 3
    assert "the server repeated a continue token after 2 pages" in _reason(report, kinds.SERVICE)
    assert len(_services(drifted)) == 2


@pytest.mark.parametrize("chunked", [False, True])
def test_an_answer_over_max_response_size_fails_the_kind(drifted: KubeApiServer, tmp_path: Path, chunked: bool) -> None:
    huge = Fault.huge(20 * MIB, chunked=chunked, resource="services")
    drifted.faults.add(huge)
    result = run_subprocess("live", "--kubeconfig", kubeconfig(drifted, tmp_path), "--format", "json", *AS_OF,
                            "--max-response-size", "1MiB")  # in a process of its own: it reads megabytes
    assert result.code == 3 and huge.fired == 1, result.stderr
    reason = _reason(json.loads(result.stdout), kinds.SERVICE)
    assert "unusable answer" in reason and "1 MiB limit (--max-response-size)" in reason
    assert ("the rest was not read" in reason) is chunked  # with a Content-Length: refused before reading


def test_a_100_mb_answer_is_cut_off_within_a_memory_budget(drifted: KubeApiServer, tmp_path: Path) -> None:
    """Issue 10.5: a 100 MB body peaked at 2.4 GB; now reading stops at the 64 MiB default."""
    drifted.faults.add(Fault.huge(100 * MIB, chunked=True, resource="services"))
    result, peak_mib = run_measured("live", "--kubeconfig", kubeconfig(drifted, tmp_path), "--format", "json",
                                    *AS_OF)
    assert result.code == 3, result.stderr
    reason = _reason(json.loads(result.stdout), kinds.SERVICE)
    assert "64 MiB limit (--max-response-size); the rest was not read" in reason
    assert peak_mib < 250, peak_mib  # measured: ~120 MiB (a normal run of this cluster: ~55 MiB)


@pytest.mark.parametrize("headers", [False, True])
def test_a_trickling_answer_ends_at_request_timeout(drifted: KubeApiServer, tmp_path: Path, headers: bool) -> None:
    """--request-timeout bounds all of an attempt: one byte every 50 ms keeps every socket read
    short, which per-read timeouts never catch (the fault would go on for 30 s)."""
    trickle = Fault.trickle(every=0.05, nbytes=1, for_at_most=30, headers=headers, resource="services", times=None)
    drifted.faults.add(trickle)
    policy = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_cap=0.02, timeout=0.5)
    snap = read(drifted, tmp_path, [kinds.SERVICE, kinds.NAMESPACE], policy=policy).snapshot
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED
    assert "after 2 attempts: no complete answer within 0.5s (--request-timeout)" in coverage.reason
    assert trickle.fired == 2
    assert snap.coverage(kinds.NAMESPACE).state is CoverageState.LISTED


def _exec_kubeconfig(server: KubeApiServer, tmp_path: Path, script: str, context: str = "plugged",
                     **exec_extra: Any) -> str:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(textwrap.dedent(script))
    exec_config = {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                   "args": [str(plugin)], "interactiveMode": "Never", **exec_extra}
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server.url,
                                               "certificate-authority-data": _b64(server.ca_pem)}}],
        "users": [{"name": "u", "user": {"exec": exec_config}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "exec-kubeconfig"
    path.write_text(json.dumps(config))
    return str(path)


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


GOOD_PLUGIN = f"""
    import json, os, sys
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": {{"token": "{TOKEN}"}}}}))
"""


def test_an_exec_plugin_gives_the_credential(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = _exec_kubeconfig(drifted, tmp_path, GOOD_PLUGIN)
    result = run("live", "--kubeconfig", config, "--format", "json", *AS_OF)
    assert result.code == 1, result.stderr
    assert TOKEN not in result.stdout + result.stderr
    assert {r.user for r in drifted.requests} == {"system:serviceaccount:audit:auditor"}


def test_an_exec_plugin_that_hangs_is_stopped_at_exec_timeout(drifted: KubeApiServer, tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    config = _exec_kubeconfig(drifted, tmp_path, f"""
        import pathlib, time
        time.sleep(30)
        pathlib.Path({str(marker)!r}).write_text("the plugin was not stopped")
    """)
    result = run("live", "--kubeconfig", config, "--exec-timeout", "1s")
    assert result.code == 3 and result.stdout == ""
    line = result.stderr.strip()
    assert line.startswith("audit: error: exec plugin ") and "(user u)" in line
    assert "did not finish within 1s (--exec-timeout); it was stopped" in line
    assert drifted.requests == []


def test_a_failing_exec_plugin_stops_the_run_with_its_output_summarised_and_escaped(drifted: KubeApiServer,
                                                                                    tmp_path: Path) -> None:
    """Issue 10.9: its stderr was printed word for word (escapes too), then the run carried on
    without credentials and reported "HTTP 401"."""
    config = _exec_kubeconfig(drifted, tmp_path, f"""
        import sys
        sys.stderr.write({TITLE!r} + "error: token expired, run 'login'\\nsecond line\\nthird line\\n")
        sys.exit(2)
    """)
    result = run("live", "--kubeconfig", config)
    assert result.code == 3 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("audit: error: exec plugin ") and "failed (exit status 2)" in lines[0]
    assert "\\x1b]0;owned\\x07error: token expired, run 'login' (and 2 more lines)" in lines[0]
    assert "401" not in lines[0]
    _no_control_characters(result.stderr)
    assert drifted.requests == []


@pytest.mark.parametrize("script, what", [
    ("print('not json')", "did not print an ExecCredential (not JSON)"),
    ("import json; print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
     "'status': {}}))", "neither a token nor a client certificate"),
    ("import json; print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', "
     "'kind': 'ExecCredential', 'status': {'token': 't'}}))", "answered apiVersion"),
])
def test_an_exec_plugin_without_a_usable_credential_stops_the_run(drifted: KubeApiServer, tmp_path: Path, script: str,
                                                                  what: str) -> None:
    result = run("live", "--kubeconfig", _exec_kubeconfig(drifted, tmp_path, script))
    assert result.code == 3 and what in result.stderr
    assert drifted.requests == []


def test_an_interactive_only_exec_plugin_is_refused(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = _exec_kubeconfig(drifted, tmp_path, GOOD_PLUGIN, interactiveMode="Always")
    result = run("live", "--kubeconfig", config)
    assert result.code == 3 and "needs a terminal (interactiveMode: Always)" in result.stderr


def test_a_missing_exec_plugin_names_its_install_hint(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = json.loads(Path(_exec_kubeconfig(drifted, tmp_path, GOOD_PLUGIN)).read_text())
    config["users"][0]["user"]["exec"].update(command="no-such-auth-plugin", args=[],
                                              installHint=f"install it {TITLE}from the vendor")
    path = tmp_path / "missing"
    path.write_text(json.dumps(config))
    result = run("live", "--kubeconfig", str(path))
    assert result.code == 3
    assert "exec plugin 'no-such-auth-plugin' (user u) not found (install it \\x1b]0;owned\\x07from the vendor)" \
        in result.stderr
    _no_control_characters(result.stderr)


# --- item 6: the kubeconfig goes through the bounded YAML loader ----------------------------------------


ALIAS_BOMB = "a: &a [" + ",".join(["x"] * 10) + "]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8)
) + "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', extra: *i}}]\n" \
    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n" \
    "current-context: c\n"


def test_a_kubeconfig_alias_bomb_is_refused_within_a_memory_budget(tmp_path: Path) -> None:
    """Issue 10.6: the kubeconfig was parsed with no YAML limits; an alias bomb reached 4 GB."""
    path = tmp_path / "bomb"
    path.write_text(ALIAS_BOMB)
    result, peak_mib = run_measured("live", "--kubeconfig", str(path))
    assert result.code == 3, result.stderr
    assert f"kubeconfig {path}:" in result.stderr and "alias bomb" in result.stderr
    assert "Traceback" not in result.stderr
    assert peak_mib < 120, peak_mib  # measured: ~40 MiB


@pytest.mark.parametrize("text, what", [
    ("clusters: []\nclusters: []\n", "duplicate key 'clusters'"),
    ("a: 1\n---\nb: 2\n", "several YAML documents"),
    ("clusters: [" + "[" * 2000 + "]" * 2000 + "]\n", "not valid YAML"),
])
def test_hostile_kubeconfig_yaml_is_one_line(tmp_path: Path, text: str, what: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    result = run("live", "--kubeconfig", str(path))
    assert result.code == 3 and what in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_oversized_kubeconfig_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_text("# padding\n" * (500 * 1024))  # 5 MiB of comments
    result = run_subprocess("live", "--kubeconfig", str(path))
    assert result.code == 3 and "larger than 4 MiB" in result.stderr


def test_the_client_never_parses_a_kubeconfig_itself(drifted: KubeApiServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from auditor.sources.live import target as target_module

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the kubernetes client parsed a kubeconfig")

    monkeypatch.setattr(yaml, "safe_load", refuse)
    monkeypatch.setattr(yaml, "load", refuse)
    [target] = target_module.resolve(kubeconfig(drifted, tmp_path))
    assert target.server == drifted.url


# --- item 8: a password in the server URL is never shown ------------------------------------------------


PASSWORD = "pw-Hunter2-in-url"


def test_a_password_in_the_server_url_appears_in_no_output(drifted: KubeApiServer, tmp_path: Path) -> None:
    host = drifted.url.removeprefix("https://")
    config = write_kubeconfig(tmp_path / "config", [
        KubeconfigContext("withpw", f"https://admin:{PASSWORD}@{host}", drifted.ca_pem, TOKEN)])
    dead = write_kubeconfig(tmp_path / "dead", [
        KubeconfigContext("dead", f"https://admin:{PASSWORD}@127.0.0.1:1", drifted.ca_pem, TOKEN)])
    files = {name: tmp_path / f"report.{name}" for name in ("json", "junit", "sarif", "markdown", "prometheus")}
    file_args = [arg for name, path in files.items() for arg in (f"--{name}", str(path))]
    outputs = [
        run("live", "--kubeconfig", str(config), *file_args, *AS_OF),
        run("live", "--kubeconfig", str(config), "--format", "json", *AS_OF),
        run("snapshot", "-o", str(tmp_path / "snap.json"), "--kubeconfig", str(config)),
        run("live", "--kubeconfig", str(config), "--expect-cluster", "0123456789ab"),
        run("live", "--kubeconfig", str(dead), "--max-retries", "0"),
    ]
    assert outputs[0].code == 1 and outputs[2].code == 0, outputs[0].stderr
    assert outputs[3].code == 3 and outputs[4].code == 3
    report = json.loads(outputs[1].stdout)
    assert report["target"]["cluster"]["server"] == drifted.url  # shown without its userinfo
    assert f"({drifted.url}, Kubernetes v1.32.3" in outputs[0].stdout
    texts = [r.stdout + r.stderr for r in outputs] + [p.read_text() for p in files.values()]
    texts.append((tmp_path / "snap.json").read_text())
    for text in texts:
        assert PASSWORD not in text and "admin:" not in text
    assert json.loads(texts[-1])["auditSnapshot"]["server"] == drifted.url


# --- item 9: escape sequences from a kubeconfig or a server never reach a terminal raw ---------------------


def test_escape_sequences_in_context_names_are_spelled_out(drifted: KubeApiServer, tmp_path: Path) -> None:
    evil = f"lab{TITLE}"
    config = write_kubeconfig(tmp_path / "config", [drifted.context(evil)], current_context=evil)
    results = [
        run("live", "--kubeconfig", str(config), "--context", f"prod{TITLE}"),  # no such context: lists them
        run("live", "--kubeconfig", str(config), "--expect-cluster", "0123456789ab"),  # the guard names it
        run("snapshot", "-o", str(tmp_path / "s.json"), "--kubeconfig", str(config)),
        run("live", "--kubeconfig", str(config), *AS_OF),
    ]
    assert [r.code for r in results] == [3, 3, 0, 1]
    assert "lab\\x1b]0;owned\\x07" in results[0].stderr and "prod\\x1b]0;owned\\x07" in results[0].stderr
    assert "context lab\\x1b]0;owned\\x07 (" in results[1].stderr
    for result in results:
        _no_control_characters(result.stdout, result.stderr)


def test_escape_sequences_in_api_error_messages_are_spelled_out(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.error(f"etcd {TITLE}leader lost\nsecond line", resource="secrets", times=None))
    config = kubeconfig(drifted, tmp_path)
    snapshot = run("snapshot", "-o", str(tmp_path / "s.json"), "--kubeconfig", config, "--max-retries", "0")
    assert snapshot.code == 3
    assert "list secrets failed: HTTP 500 Internal Server Error: Internal error occurred: etcd " \
           "\\x1b]0;owned\\x07leader lost (and 1 more line)" in snapshot.stderr
    code, report, result = live_json(drifted, tmp_path, "--max-retries", "0")
    assert code == 3
    _no_control_characters(snapshot.stderr, result.stderr, _reason(report, kinds.SECRET))
    text = run("live", "--kubeconfig", config, "--max-retries", "0", *AS_OF)
    _no_control_characters(text.stdout, text.stderr)


# --- item 10: an empty target guard is refused ---------------------------------------------------------------


@pytest.mark.parametrize("args, env", [
    (("--expect-cluster", ""), None),
    (("--expect-cluster", " , "), None),
    ((), {"EXPECT_CLUSTER": ", ,"}),
])
def test_an_empty_expect_cluster_is_a_usage_error(drifted: KubeApiServer, tmp_path: Path, args: tuple[str, ...],
                                                  env: dict[str, str] | None) -> None:
    config = kubeconfig(drifted, tmp_path)
    for command in (["live"], ["snapshot", "-o", str(tmp_path / "s.json")]):
        result = run(*command, "--kubeconfig", config, *args, env=env)
        assert result.code == 2, result.stderr
        assert "--expect-cluster / EXPECT_CLUSTER is set but names no cluster" in result.stderr
    assert drifted.requests == [] and not (tmp_path / "s.json").exists()


def test_an_unset_expect_cluster_variable_is_no_guard(drifted: KubeApiServer, tmp_path: Path) -> None:
    result = run("live", "--kubeconfig", kubeconfig(drifted, tmp_path), *AS_OF, env={"EXPECT_CLUSTER": ""})
    assert result.code == 1


# --- every limit is an option, and every kind still reads under the defaults ----------------------------------


def test_every_kind_reads_under_the_default_limits(drifted: KubeApiServer, tmp_path: Path) -> None:
    snap = read(drifted, tmp_path, ALL_KINDS).snapshot
    assert {c.state for c in snap.listed.values()} <= {CoverageState.LISTED, CoverageState.NOT_SERVED}


@pytest.mark.parametrize("option, value, message", [
    ("--max-response-size", "10", "too small"),
    ("--max-response-size", "lots", "is not a size"),
    ("--max-pages", "0", "0 is not in the range"),
    ("--max-chunk-size", "0", "0 is not in the range"),
    ("--exec-timeout", "soon", "is not a duration"),
])
def test_bad_limits_are_usage_errors(option: str, value: str, message: str) -> None:
    result = run("live", option, value)
    assert result.code == 2 and message in result.stderr


def test_an_exec_plugin_that_fails_when_the_credential_is_refreshed_stops_the_run(drifted: KubeApiServer,
                                                                                 tmp_path: Path) -> None:
    """The credential expires at once, so the client runs the plugin again before the first request:
    that run fails, and the run stops with its message (exit 3), not with a 401 or a traceback."""
    marker = tmp_path / "ran-once"
    config = _exec_kubeconfig(drifted, tmp_path, f"""
        import json, pathlib, sys
        marker = pathlib.Path({str(marker)!r})
        if marker.exists():
            sys.stderr.write("refresh token revoked\\n")
            sys.exit(1)
        marker.write_text("1")
        print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {{"token": "{TOKEN}", "expirationTimestamp": "2020-01-01T00:00:00Z"}}}}))
    """)
    result = run("live", "--kubeconfig", config)
    assert result.code == 3 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "failed (exit status 1): refresh token revoked" in lines[0], result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("text, shown", [
    ("https://admin:s3cret@10.0.0.1:6443", "https://10.0.0.1:6443"),
    ("https://admin:p@ss@10.0.0.1:6443/api", "https://10.0.0.1:6443/api"),
    ("cannot reach https://u@h/x?next=a@b", "cannot reach https://h/x?next=a@b"),
    ("lab\x1b]0;t\x07\x9b\u202egpj.exe", "lab\\x1b]0;t\\x07\\x9b\\u202egpj.exe"),
    ("plain text, 100% fine: ünïcode", "plain text, 100% fine: ünïcode"),
])
def test_what_a_kubeconfig_or_server_wrote_is_cleaned(text: str, shown: str) -> None:
    from auditor.sources.live.safe_text import clean

    assert clean(text) == shown


# --- list items of any shape (the offline fuzzer's objects, served) -------------------------------

LIVE_EXAMPLES = max(5, settings().max_examples // 4)


@pytest.fixture(scope="module")
def served() -> Iterator[KubeApiServer]:
    with serve("drifted") as server:
        yield server


@settings(max_examples=LIVE_EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                             HealthCheck.too_slow, HealthCheck.data_too_large])
@given(items=documents(max_objects=4))
def test_list_items_of_any_shape_never_crash_a_live_audit(served: KubeApiServer,
                                                          tmp_path_factory: pytest.TempPathFactory,
                                                          items: list[Any]) -> None:
    """The Services list answered with objects of any kind and shape (tests/test_fuzz.py's mutated templates:
    wrong types anywhere, missing names, deep nesting): the read refuses the answer or keeps what it can,
    and the audit ends in a report with exit 0, 1 or 3, never an internal error."""
    served.faults.clear()
    body = json.dumps({"kind": "ServiceList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                       "items": items}).encode()
    served.faults.add(Fault.answer(body, resource="services", times=None))
    code, report, result = live_json(served, tmp_path_factory.mktemp("live"))
    assert code in (0, 1, 3) and "internal error" not in result.stderr, result.stderr
    assert _state(report, kinds.SERVICE) in ("listed", "failed")
