"""Hostile input is refused cleanly, in bounded memory and time (issue 6; docs/input.md).

Every case runs the command in its own process and checks what a user sees:
exit 2, one line on stderr naming the file (`audit: error: PATH...`), no
traceback, nothing on stdout, and no report written to `--json`/`--junit` (an
existing report is left as it was). Peak memory (the child's ru_maxrss, as
getrusage reports it through os.wait4, or for a fresh interpreter its own VmHWM:
see `_run_fresh`) and wall time are measured and bounded
generously: this is a behaviour test, not a benchmark. Children run under
RLIMIT_AS, so a regression fails the test instead of swapping the machine.

Starting Python and importing the auditor costs most of a second, so the
cases run in processes forked from a "zygote" that imported the CLI, the
rules and the reporters once: each child calls `auditor.cli.main(ARGS)` with
its own standard streams, working folder and limits, exactly what
`python -m auditor ARGS` does after its imports. A few cases also run the
real `python -m auditor` (`fresh=True`), to show both agree.

Set AUDIT_HOSTILE_LOG=FILE to append each case's measurements to FILE.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import ROOT

MAX_RSS_MB = 500
MAX_SECONDS = 30
TIMEOUT = 90
ADDRESS_SPACE_LIMIT = 4 * 1024**3  # the child is stopped by MemoryError long before the machine suffers

SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {type: ClusterIP, ports: [{port: 80}]}
"""

# Root reads every file whatever its mode; a case about unreadable files runs without the
# capabilities that let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, ...), as the same user, so
# it reads the checkout wherever that lives (a fresh clone under `mktemp -d` is 0700).
DROP_CAPABILITIES = r'''
def drop_capabilities():
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3, this process; no capability
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
'''

ZYGOTE = DROP_CAPABILITIES + r'''
import contextlib, io, json, os, resource, sys, tempfile, time, traceback

from auditor.cli import main
from auditor.report import FORMATS

# Warm up: one real audit per format imports everything an audit imports lazily.
with tempfile.TemporaryDirectory() as tmp:
    manifest = os.path.join(tmp, "svc.yaml")
    with open(manifest, "w") as stream:
        stream.write("apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: b}\nspec: {type: NodePort}\n")
    for name in FORMATS:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                main([manifest, "--format", name, "--json", os.path.join(tmp, "r.json"),
                      "--junit", os.path.join(tmp, "r.xml")])
            except SystemExit:
                pass
requests, responses = sys.stdin.buffer, sys.stdout.buffer
responses.write(b"ready\n")
responses.flush()
for line in requests:
    request = json.loads(line)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(request["cwd"])
            for fd, (path, flags) in enumerate([(request["stdin"], os.O_RDONLY),
                                                (request["stdout"], os.O_WRONLY | os.O_TRUNC),
                                                (request["stderr"], os.O_WRONLY | os.O_TRUNC)]):
                os.dup2(os.open(path, flags), fd)
            sys.stdin = open(0, "r", encoding="utf-8", closefd=False)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
            resource.setrlimit(resource.RLIMIT_AS, (request["address_space"],) * 2)
            if request["drop_capabilities"]:
                drop_capabilities()
            try:
                main(request["args"])
                code = 0
            except SystemExit as exited:
                code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > request["timeout"]:
            os.kill(pid, 9)
            done, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.002)
    responses.write(json.dumps({"code": os.waitstatus_to_exitcode(status), "max_rss_kb": usage.ru_maxrss,
                                "seconds": time.monotonic() - started, "timed_out": timed_out}).encode() + b"\n")
    responses.flush()
'''


@dataclass
class Measured:
    code: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float


class Zygote:
    """A process that imported the auditor once and forks one child per case."""

    def __init__(self) -> None:
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("AUDIT_DEBUG", None)
        self.process = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=ROOT, env=env)
        assert self._readline(120) == b"ready\n", "the zygote did not start"

    def _readline(self, timeout: float) -> bytes:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.process.kill()
            pytest.fail("the zygote stopped answering")
        return self.process.stdout.readline()

    def run(self, args: list[str], cwd: Path, stdin: str, stdout: str, stderr: str,
            drop_capabilities: bool = False) -> dict[str, Any]:
        assert self.process.stdin is not None
        request = {"args": args, "cwd": str(cwd), "stdin": stdin, "stdout": stdout, "stderr": stderr,
                   "drop_capabilities": drop_capabilities, "timeout": TIMEOUT, "address_space": ADDRESS_SPACE_LIMIT}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self._readline(TIMEOUT + 60))
        if answer["timed_out"]:
            pytest.fail(f"audit {' '.join(args)} did not finish within {TIMEOUT}s (a hang)")
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


_ZYGOTE: list[Zygote] = []


@pytest.fixture(scope="module", autouse=True)
def zygote() -> Iterator[Zygote]:
    _ZYGOTE.append(Zygote())
    yield _ZYGOTE[0]
    _ZYGOTE.pop().close()


def _child_limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


# A fresh interpreter reports its own peak RSS (VmHWM of its own address space) when it exits.
# Its ru_maxrss would not do: Linux carries the high-water mark of the address space replaced
# by exec into the new program's ru_maxrss, so a child forked from a pytest worker that has
# grown to 300 MB would "peak" at 300 MB whatever the auditor did.
_FRESH_MAIN = """
import atexit, os, runpy, sys
def _report_peak(path=os.environ.pop("AUDIT_TEST_PEAK_FILE")):
    with open("/proc/self/status", encoding="ascii") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(path, "w", encoding="ascii") as out:
        out.write(peak)
atexit.register(_report_peak)
sys.argv[0] = "audit"
runpy.run_module("auditor", run_name="__main__", alter_sys=True)
"""


def _run_fresh(args: list[str], cwd: Path, stdin_arg: Any, out: IO[bytes], err: IO[bytes],
               feeder: Callable[[Any], None] | None) -> tuple[int, float, float]:
    """`python -m auditor ARGS` in a new interpreter: exit code, seconds, peak RSS (MB)."""
    peak_file = Path(tempfile.mkdtemp(prefix="audit-peak-")) / "vmhwm"
    env = {**os.environ, "NO_COLOR": "1", "AUDIT_TEST_PEAK_FILE": str(peak_file)}
    env.pop("AUDIT_DEBUG", None)
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", _FRESH_MAIN, *args], stdin=stdin_arg, stdout=out, stderr=err,
                               cwd=cwd, env=env, preexec_fn=_child_limits)
    if feeder is not None:
        threading.Thread(target=feeder, args=(process.stdin,), daemon=True).start()
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > TIMEOUT:
            process.kill()
            os.wait4(process.pid, 0)
            pytest.fail(f"audit {' '.join(args)} did not finish within {TIMEOUT}s (a hang)")
        time.sleep(0.01)
    peak_mb = int(peak_file.read_text(encoding="ascii")) / 1024 if peak_file.exists() else usage.ru_maxrss / 1024
    shutil.rmtree(peak_file.parent, ignore_errors=True)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return process.returncode, time.monotonic() - started, peak_mb


def run_measured(*args: str, cwd: Path, stdin: bytes | None = None, stdin_file: str | None = None,
                 feeder: Callable[[object], None] | None = None,
                 fresh: bool = False, unprivileged: bool = False) -> Measured:
    """Run the auditor on ARGS in its own process: exit code, output, wall time and peak RSS.

    `unprivileged`: as root, without the capabilities that override file modes (see DROP_CAPABILITIES).
    """
    with tempfile.TemporaryDirectory(prefix="audit-run-") as tmp:
        os.chmod(tmp, 0o777)
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        for path in (out_path, err_path):
            Path(path).touch(mode=0o666)
            os.chmod(path, 0o666)
        stdin_path = stdin_file or os.devnull
        if stdin is not None:
            stdin_path = os.path.join(tmp, "stdin")
            Path(stdin_path).write_bytes(stdin)
            os.chmod(stdin_path, 0o644)
        if fresh:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                stdin_arg = subprocess.PIPE if feeder is not None else open(stdin_path, "rb")  # noqa: SIM115
                try:
                    code, seconds, rss = _run_fresh(list(args), cwd, stdin_arg, out, err, feeder)
                finally:
                    if stdin_arg is not subprocess.PIPE:
                        stdin_arg.close()  # type: ignore[union-attr]
        else:
            if feeder is not None:  # standard input is a pipe (a FIFO the feeder writes)
                stdin_path = os.path.join(tmp, "stdin.fifo")
                os.mkfifo(stdin_path)
                os.chmod(stdin_path, 0o666)

                def feed(path: str = stdin_path) -> None:
                    try:
                        with open(path, "wb") as stream:
                            feeder(stream)
                    except OSError:
                        pass

                threading.Thread(target=feed, daemon=True).start()
            answer = _ZYGOTE[0].run(list(args), cwd, stdin_path, out_path, err_path,
                                    drop_capabilities=unprivileged and os.geteuid() == 0)
            code, seconds, rss = answer["code"], answer["seconds"], answer["max_rss_kb"] / 1024
        measured = Measured(code, Path(out_path).read_bytes().decode("utf-8", "replace"),
                            Path(err_path).read_bytes().decode("utf-8", "replace"), seconds, rss)
    log = os.environ.get("AUDIT_HOSTILE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(json.dumps({"args": [a[-60:] for a in args], "fresh": fresh, "code": measured.code,
                                     "seconds": round(measured.seconds, 3), "max_rss_mb": round(measured.max_rss_mb, 1),
                                     "stderr": measured.stderr.strip()[:200]}) + "\n")
    return measured


def assert_refused(result: Measured, names: str, *problem: str) -> None:
    """Exit 2, one stderr line `audit: error: NAME...` holding each of `problem`, bounded cost."""
    assert result.code == 2, result
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and result.stderr.endswith("\n"), result.stderr
    assert lines[0].startswith(f"audit: error: {names}"), (names, lines[0])
    for part in problem:
        assert part in lines[0], (part, lines[0])
    assert result.stdout == ""
    assert result.max_rss_mb < MAX_RSS_MB, f"peak RSS {result.max_rss_mb:.0f} MB"
    assert result.seconds < MAX_SECONDS, f"{result.seconds:.1f}s"


def assert_listed(result: Measured, report: Path, file: str, *problem: str) -> None:
    """Exit 3: `file` is an input problem of the JSON `report` (the rest was audited), without a traceback."""
    assert result.code == 3, result
    assert result.stderr == "", result.stderr
    listed = json.loads(report.read_text(encoding="utf-8"))["inputProblems"]
    match = [entry for entry in listed if entry["file"] == file]
    assert match, listed
    for part in problem:
        assert part in match[0]["message"], (part, match[0])
    assert result.max_rss_mb < MAX_RSS_MB, f"peak RSS {result.max_rss_mb:.0f} MB"
    assert result.seconds < MAX_SECONDS, f"{result.seconds:.1f}s"


STRICT = ("--strict-input",)


class Reports:
    """`--json`/`--junit` options, and a check that nothing was written (a stale report stays as it was)."""

    def __init__(self, out: Path) -> None:
        out.mkdir()
        self.out, self.stale, self.junit = out, out / "audit.json", out / "sub" / "audit.xml"
        self.stale.write_text('{"stale": true}\n', encoding="utf-8")
        self.args = ("--json", str(self.stale), "--junit", str(self.junit))

    def untouched(self) -> None:
        assert self.stale.read_text(encoding="utf-8") == '{"stale": true}\n'
        assert not self.junit.exists() and not self.junit.parent.exists()
        assert sorted(p.name for p in self.out.iterdir()) == ["audit.json"], "no temporary file left behind"


@pytest.fixture
def reports(tmp_path: Path) -> Reports:
    return Reports(tmp_path / "reports")


def audit(tmp_path: Path, reports: Reports, *paths: str, extra: tuple[str, ...] = (), **kwargs: Any) -> Measured:
    return run_measured(*paths, *reports.args, *extra, cwd=tmp_path, **kwargs)


# --- YAML alias bombs ------------------------------------------------------------


def billion_laughs(depth: int, width: int = 10) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: app}\ndata:\n" + "".join(
        f"  {line}\n" for line in lines
    )


@pytest.mark.parametrize("depth", [6, 9, 20])
def test_billion_laughs_is_refused(tmp_path: Path, reports: Reports, depth: int) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(depth), encoding="utf-8")
    result = audit(tmp_path, reports, str(path))
    assert_refused(result, f"{path}:", "aliases expand the document by more than 100,000 nodes")
    reports.untouched()


def test_small_alias_bomb_refused_under_a_lower_limit(tmp_path: Path, reports: Reports) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(3), encoding="utf-8")  # 1,110 nodes: fine by default
    ok = audit(tmp_path, reports, str(path))
    assert ok.code in (0, 1, 3) and ok.stderr == "", ok
    refused = audit(tmp_path, reports, str(path), extra=("--max-alias-expansion", "100"))
    assert_refused(refused, f"{path}:", "more than 100 nodes", "alias bomb")


@pytest.mark.parametrize("text", [
    "&a [*a]\n",
    "a: &a {b: *a}\n",
    '{"a":&x [1, *x]}\n',  # JSON-like key: the anchor right after the colon
    "apiVersion: v1\nkind: List\nitems:\n- &a [*a]\n",
], ids=["sequence", "mapping", "json-like-key", "in-a-list"])
def test_recursive_alias_is_refused(tmp_path: Path, reports: Reports, text: str) -> None:
    path = tmp_path / "recursive.yaml"
    path.write_text(text, encoding="utf-8")
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}:", "recursive alias")
    reports.untouched()


def test_merge_key_bomb_is_refused(tmp_path: Path, reports: Reports) -> None:
    """`<<` merges copy keys: doubling them per level is a bomb too."""
    lines = ["b0: &b0 {k0: lol}"] + [f"b{i}: &b{i} {{<<: [*b{i - 1}, *b{i - 1}], k{i}: v}}" for i in range(1, 40)]
    path = tmp_path / "merge.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}:", "alias bomb")


# --- deep nesting ----------------------------------------------------------------------


@pytest.mark.parametrize("name, text, problem", [
    ("flow.yaml", "[" * 100_000 + "]" * 100_000, "exceeded maximum nesting depth"),
    ("flowmap.yaml", "{a: " * 100_000 + "1" + "}" * 100_000, "exceeded maximum nesting depth"),
    ("block.yaml", "- " * 100_000 + "x\n", "exceeded maximum nesting depth"),
    ("indent.yaml", "".join(" " * i + "a:\n" for i in range(1_500)) + " " * 1_500 + "x\n",
     "exceeded maximum nesting depth"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("deepobj.json", '{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    ("deepitems.json", '{"kind":"List","apiVersion":"v1","items":[' + "[" * 100_000 + "]" * 100_000 + "]}",
     "nested too deeply"),
])
def test_deep_nesting_is_refused(tmp_path: Path, reports: Reports, name: str, text: str, problem: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}", problem)
    reports.untouched()


def _deep(depth: int) -> str:
    return "{a: " * depth + "x" + "}" * depth


@pytest.mark.parametrize("field", ["spec.ports", "metadata.labels", "spec.selector"])
def test_nesting_just_under_the_limit_is_audited(tmp_path: Path, field: str) -> None:
    """990 levels parse (libyaml's limit is 1,000): every rule must cope without recursing."""
    section, key = field.split(".")
    text = (f"apiVersion: v1\nkind: Service\nmetadata: {{name: deep, namespace: app}}\n"
            f"{section}:\n  {key}: {_deep(990)}\n")
    if section == "metadata":
        text = (f"apiVersion: v1\nkind: Service\nmetadata:\n  name: deep\n  namespace: app\n  {key}: {_deep(990)}\n"
                "spec: {type: NodePort}\n")
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_measured(str(path), "--format", "json", cwd=tmp_path)
    assert result.code in (0, 1), result
    assert result.stderr == ""
    assert json.loads(result.stdout)["summary"]["rulesError"] == 0


HELM_KINDS = {"HelmRelease", "Application"}  # their values: see test_deep_helm_values_are_audited


def _deep_everywhere(as_list: bool, depth_two: bool) -> str:
    """Every fuzz template with its `spec` (or every field two levels down) ~990 levels deep."""
    import yaml

    from tests.conftest import FIXTURES

    deep = ("[" * 990 + "x" + "]" * 990) if as_list else _deep(990)
    documents = []
    for template in yaml.safe_load_all((FIXTURES / "fuzz" / "templates.yaml").read_text(encoding="utf-8")):
        if template["kind"] in HELM_KINDS:
            continue
        if depth_two:  # the first few fields of each section (all of them would only cost time)
            for section in ("spec", "data", "status", "metadata"):
                fields = template.get(section)
                if isinstance(fields, dict):
                    keys = [k for k in fields if (section, k) not in (("metadata", "name"), ("metadata", "namespace"))]
                    for key in keys[:3]:
                        fields[key] = "DEEP"
        else:
            template["spec"] = "DEEP"
        documents.append(yaml.safe_dump(template, sort_keys=False).replace("DEEP", deep))
    return "---\n".join(documents)


@pytest.mark.parametrize("as_list", [False, True], ids=["mappings", "lists"])
@pytest.mark.parametrize("depth_two", [False, True], ids=["spec", "fields"])
def test_every_kind_with_nesting_just_under_the_limit(tmp_path: Path, as_list: bool, depth_two: bool) -> None:
    """No rule (nor the Cilium configuration it reads) recurses into a field without bound."""
    path = tmp_path / "deep.yaml"
    path.write_text(_deep_everywhere(as_list, depth_two), encoding="utf-8")
    result = run_measured(str(path), "--format", "json", cwd=tmp_path)
    assert result.code in (0, 1) and result.stderr == "", (result.code, result.stderr)
    report = json.loads(result.stdout)
    assert report["summary"]["rulesError"] == 0, [r for r in report["rules"] if r["status"] == "error"]


@pytest.mark.parametrize("release", [
    "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium, namespace: kube-system}\n"
    "spec:\n  chart: {spec: {chart: cilium}}\n  values: DEEP\n",
    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: cilium, namespace: argocd}\n"
    "spec:\n  source: {chart: cilium, helm: {valuesObject: DEEP}}\n",
], ids=["helmrelease", "argocd"])
def test_deep_helm_values_are_audited(tmp_path: Path, release: str) -> None:
    path = tmp_path / "helm.yaml"
    path.write_text(release.replace("DEEP", _deep(990)) + "---\n" + SERVICE, encoding="utf-8")
    result = run_measured(str(path), "--format", "json", cwd=tmp_path)
    assert result.code in (0, 1, 3) and "internal error" not in result.stderr, result.stderr
    assert json.loads(result.stdout)["summary"]["rulesError"] == 0


# --- size, special files, links ---------------------------------------------------------


def test_one_gigabyte_file_is_refused_before_reading(tmp_path: Path, reports: Reports) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as stream:
        stream.truncate(1024**3)  # sparse: nothing is written
    result = audit(tmp_path, reports, str(path), fresh=True)
    assert_refused(result, f"{path}:", "1,073,741,824 bytes, over the 805,306,368-byte limit", "--max-file-bytes")
    assert result.max_rss_mb < 100, result
    reports.untouched()


def test_node_dense_yaml_is_refused_before_parsing(tmp_path: Path, reports: Reports) -> None:
    """8 MB of `[],` would build ~2.7 million nodes (about 2 GB in libyaml's graph):
    refused from a cheap count, in bounded memory, before any parsing."""
    path = tmp_path / "dense.yaml"
    path.write_text("[" + "[]," * 2_700_000 + "[]]\n", encoding="utf-8")
    result = audit(tmp_path, reports, str(path), fresh=True)
    assert_refused(result, f"{path}:", "YAML nodes (lines and flow items), over the 2,000,000-node limit",
                   "--max-yaml-nodes")
    assert result.max_rss_mb < 150 and result.seconds < 10, result
    reports.untouched()


def test_max_file_bytes_is_the_limit(tmp_path: Path, reports: Reports) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE, encoding="utf-8")
    size = path.stat().st_size
    assert_refused(audit(tmp_path, reports, str(path), extra=("--max-file-bytes", str(size - 1))), f"{path}:",
                   f"over the {size - 1:,}-byte limit")
    ok = audit(tmp_path, reports, str(path), extra=("--max-file-bytes", str(size)))
    assert ok.code == 0, ok


def test_dev_zero_is_refused_without_reading_it_all(tmp_path: Path, reports: Reports) -> None:
    result = audit(tmp_path, reports, "/dev/zero", fresh=True)
    assert_refused(result, "/dev/zero:", "binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100, f"read far more than one chunk: {result.max_rss_mb:.0f} MB"
    reports.untouched()


def test_endless_text_stream_hits_the_size_limit(tmp_path: Path, reports: Reports) -> None:
    """A FIFO (like `audit <(yes)`) has no size to check first: reading stops at the limit."""
    fifo = tmp_path / "stream.yaml"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> None:
        try:
            with open(fifo, "wb") as stream:
                chunk = b"key: value\n" * 10_000
                while not stop.is_set():
                    stream.write(chunk)
        except (BrokenPipeError, OSError):
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        result = audit(tmp_path, reports, str(fifo), extra=("--max-file-bytes", str(20 * 1024**2)))
    finally:
        stop.set()
    assert_refused(result, f"{fifo}:", "larger than the 20,971,520-byte limit")
    thread.join(timeout=10)


def test_fifo_given_as_input_is_read_like_a_pipe(tmp_path: Path, reports: Reports) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as stream:
            stream.write(SERVICE.encode())

    threading.Thread(target=writer, daemon=True).start()
    result = audit(tmp_path, reports, str(fifo), "--format", "json")
    assert result.code == 0 and result.stderr == "", result


def test_fifo_and_device_in_a_folder_are_refused_not_read(tmp_path: Path, reports: Reports) -> None:
    """A checked-out repository with a FIFO in it must not hang the walk (nobody writes to it)."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "a-service.yaml").write_text(SERVICE, encoding="utf-8")
    os.mkfifo(folder / "b-fifo.yaml")
    result = audit(tmp_path, reports, str(folder), extra=STRICT)
    assert_refused(result, f"{folder / 'b-fifo.yaml'}:", "a FIFO, not a regular file")
    os.unlink(folder / "b-fifo.yaml")
    os.symlink("/dev/zero", folder / "c-zero.yaml")
    result = audit(tmp_path, reports, str(folder), extra=STRICT)
    assert_refused(result, f"{folder / 'c-zero.yaml'}:", "a character device, not a regular file")
    reports.untouched()
    # Without --strict-input each is an input problem of the report, and the rest is audited.
    listed = audit(tmp_path, reports, str(folder))
    assert_listed(listed, reports.stale, str(folder / "c-zero.yaml"), "a character device, not a regular file")
    os.unlink(folder / "c-zero.yaml")
    os.mkfifo(folder / "b-fifo.yaml")
    assert_listed(audit(tmp_path, reports, str(folder)), reports.stale, str(folder / "b-fifo.yaml"), "a FIFO")


def test_symlink_loops_in_a_folder_end(tmp_path: Path, reports: Reports) -> None:
    folder = tmp_path / "repo"
    (folder / "apps" / "web").mkdir(parents=True)
    (folder / "apps" / "web" / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    os.symlink("..", folder / "apps" / "web" / "up")  # a loop through the parent
    os.symlink(str(folder), folder / "apps" / "root")  # a loop to the top
    os.symlink("self", folder / "apps" / "self")  # a link to itself (not .yaml: not read)
    result = run_measured(str(folder), "--format", "json", cwd=tmp_path)
    # A tree holding a Service and no network policy fails default-deny (exit 1): the walk is what matters here.
    assert result.code in (0, 1) and result.stderr == "", result
    report = json.loads(result.stdout)
    assert report["summary"]["rulesError"] == 0 and report["inputProblems"] == []
    assert result.seconds < MAX_SECONDS and result.max_rss_mb < MAX_RSS_MB
    os.symlink("loop.yaml", folder / "loop.yaml")  # a manifest name that is a link to itself
    assert_refused(audit(tmp_path, reports, str(folder), extra=STRICT), f"{folder / 'loop.yaml'}:",
                   "Too many levels of symbolic links")
    reports.untouched()
    assert_listed(audit(tmp_path, reports, str(folder)), reports.stale, str(folder / "loop.yaml"),
                  "cannot read: Too many levels of symbolic links")


def test_dangling_and_looping_paths_on_the_command_line(tmp_path: Path, reports: Reports) -> None:
    loop = tmp_path / "loop.yaml"
    os.symlink("loop.yaml", loop)
    assert_refused(audit(tmp_path, reports, str(loop)), f"{loop}:", "cannot read", "symbolic links")
    missing = tmp_path / "missing.yaml"
    assert_refused(audit(tmp_path, reports, str(missing)), f"{missing}:", "no such file or folder")
    under_file = tmp_path / "loop.yaml" / "x.yaml"
    assert_refused(audit(tmp_path, reports, str(under_file)), f"{under_file}:")
    reports.untouched()


# --- encodings and binary content ------------------------------------------------------------


@pytest.mark.parametrize("name, data, problem", [
    ("latin1.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\u00e9}\n".encode("latin-1"),
     ":3: not valid UTF-8 (byte 0xe9 at offset 51)"),
    ("utf16le.yaml", "\ufeff".encode("utf-16-le") + SERVICE.encode("utf-16-le"), ": UTF-16 text, not UTF-8"),
    ("utf16be.json", "\ufeff".encode("utf-16-be") + b'\x00{\x00}', ": UTF-16 text, not UTF-8"),
    ("image.yaml", bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"),
     ": binary file (contains NUL bytes)"),
    ("nul.json", b"\x00" * 4096, ": binary file (contains NUL bytes)"),
    ("high.yaml", bytes(range(0x80, 0x100)), ":1: not valid UTF-8 (byte 0x80 at offset 0)"),
    ("empty.yaml", b"", ": empty (no YAML or JSON document)"),
    ("comments.yaml", b"# nothing here\n---\n...\n", ": empty (no YAML or JSON document)"),
    ("empty.json", b"  \n", ": empty input"),
    ("bad.yaml", b"apiVersion: v1\nkind: [Service\nmetadata: {name: x}\n", ":3: invalid YAML"),
    ("bad.json", b'{"apiVersion": "v1",\n "kind": "Service",,\n}', ":2: invalid JSON"),
    ("trailing.json", b'{"kind": "List", "items": []} {}', ":1: invalid JSON: extra data after the document"),
    ("dup.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  type: ClusterIP\n"
     b"  type: LoadBalancer\n",
     ":6: duplicate key 'type' (first at line 5)"),
    ("dup.json", b'{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},\n'
     b'"spec": {"type": "A", "type": "B"}}',
     ":2: duplicate key 'type'"),
    ("dupitems.json", b'{"apiVersion": "v1", "kind": "List", "items": [],\n "items": []}', ":2: duplicate key 'items'"),
    ("nonobjects.json", b'{"apiVersion": "v1", "kind": "List", "items": [1, "x", null, [], {"kind": 3}]}',
     ": no Kubernetes objects found (5 documents ignored"),
    ("values.yaml", b"replicaCount: 2\nimage: {tag: v1}\n", ": no Kubernetes objects found (1 documents ignored"),
    ("bigint.json", b'{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": '
     + b"9" * 5000 + b"}]}}", ":1: invalid JSON: integer too large"),
    ("hexint.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: !!int 0x"
     + b"f" * 4000 + b"}]}\n",
     ":4: invalid YAML: integer too large"),
    ("sexagesimal.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: !!int 1"
     + b":1" * 300_000
     + b"}]}\n", ":4: invalid YAML: invalid integer '1:1:1"),
    ("badbool.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\n"
     b"spec: {publishNotReadyAddresses: !!bool maybe}\n",
     ":4: invalid YAML: invalid boolean 'maybe'"),
    ("surrogate.json", b'{"apiVersion": "v1", "kind": "Service",\n "metadata": {"name": "x\\ud800"}}',
     ":2: invalid JSON: string holds a lone UTF-16 surrogate \\ud800"),
])
def test_unreadable_content_is_refused(tmp_path: Path, reports: Reports, name: str, data: bytes, problem: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}{problem}")
    reports.untouched()


def test_utf8_with_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + SERVICE.encode())
    result = run_measured(str(path), cwd=tmp_path)
    assert result.code == 0 and result.stderr == "", result


def test_file_name_with_a_newline_stays_one_line(tmp_path: Path, reports: Reports) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "bad\nname.yaml").write_text("kind: [\n", encoding="utf-8")
    result = audit(tmp_path, reports, str(folder), extra=STRICT)
    assert_refused(result, f"{folder}/bad\\nname.yaml:2: invalid YAML")
    reports.untouched()
    (folder / "svc.yaml").write_text(SERVICE, encoding="utf-8")  # the problem beside a good file, in the text report
    shown = audit(tmp_path, reports, str(folder))
    assert shown.code == 3 and f"{folder}/bad\\x0aname.yaml:2:" in shown.stdout, shown  # escaped, as every name
    assert "bad\nname" not in shown.stdout


# --- many files ----------------------------------------------------------------------------


def test_more_files_than_max_files_is_refused(tmp_path: Path, reports: Reports) -> None:
    folder = tmp_path / "many"
    for index in range(1_200):
        sub = folder / f"d{index % 30:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{index:05d}.yaml").write_text(f"a: {index}\n", encoding="utf-8")
    result = audit(tmp_path, reports, str(folder), extra=("--max-files", "1000"))
    assert_refused(result, f"{folder}:", "more than 1,000 manifest files (see --max-files)")
    reports.untouched()
    read_all = run_measured(str(folder), "--max-files", "1200", cwd=tmp_path)
    assert_refused(read_all, f"{folder}:", "no Kubernetes objects found (1200 documents ignored")


# --- permissions ------------------------------------------------------------------------------


def _require_permission_checks(shared_tmp: Path) -> None:
    """Skip when even an unprivileged run reads a mode-000 file (a file system that ignores modes)."""
    probe = shared_tmp / "probe.yaml"
    probe.write_text(SERVICE, encoding="utf-8")
    probe.chmod(0o000)
    result = run_measured(str(probe), cwd=shared_tmp, unprivileged=True)
    probe.unlink()
    if result.code != 2 or "Permission denied" not in result.stderr:
        pytest.skip(f"file modes are not enforced here (exit {result.code}: {result.stderr[-200:]})")


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary folder whose mode bits the test sets (pytest's tmp_path is left alone)."""
    path = Path(tempfile.mkdtemp(prefix="audit-perm-"))
    path.chmod(0o755)
    yield path
    for child in path.rglob("*"):
        if child.is_dir() and not child.is_symlink():
            child.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


def test_unreadable_file_folder_and_path(shared_tmp: Path) -> None:
    """Runs as the same user, unprivileged: it reads the checkout wherever it lives, and not these files."""
    _require_permission_checks(shared_tmp)
    out = shared_tmp / "out"
    out.mkdir()
    out.chmod(0o777)
    report_args = ("--json", str(out / "audit.json"))

    def run(path: Path) -> Measured:
        return run_measured(str(path), *report_args, cwd=shared_tmp, unprivileged=True)

    unreadable = shared_tmp / "secret.yaml"
    unreadable.write_text(SERVICE, encoding="utf-8")
    unreadable.chmod(0o000)
    assert_refused(run(unreadable), f"{unreadable}:", "cannot read: Permission denied")

    folder = shared_tmp / "locked"
    folder.mkdir()
    (folder / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    folder.chmod(0o000)
    assert_refused(run(folder), f"{folder}:", "cannot read folder: Permission denied")

    inside = shared_tmp / "closed" / "svc.yaml"  # a folder that can be listed but not traversed
    inside.parent.mkdir()
    inside.write_text(SERVICE, encoding="utf-8")
    inside.parent.chmod(0o644)
    assert_refused(run(inside), f"{inside}:", "cannot read: Permission denied")

    nested = shared_tmp / "repo"
    (nested / "team").mkdir(parents=True)
    (nested / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    (nested / "team" / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    (nested / "team").chmod(0o000)
    strict = run_measured(str(nested), *report_args, *STRICT, cwd=shared_tmp, unprivileged=True)
    assert_refused(strict, f"{nested / 'team'}:", "cannot read folder: Permission denied")
    assert list(out.iterdir()) == []
    assert_listed(run(nested), out / "audit.json", str(nested / "team"), "cannot read folder: Permission denied")
    (out / "audit.json").unlink()
    readable = shared_tmp / "readable.yaml"
    readable.write_text(SERVICE, encoding="utf-8")
    ok = run(readable)
    assert ok.code == 0 and ok.stderr == "", ok  # the auditor's own files were readable all along


@pytest.mark.parametrize("own_file, options", [
    ("auditor_rules/index.json", ()),
    # The bundled exception list is checked by the test suite, not at run time: the schema is read
    # when the user's own list is validated.
    ("auditor/data/exceptions.schema.json", ("--exceptions", "team-exceptions.yaml")),
    ("auditor/data/exceptions.yaml", ()),
])
def test_the_auditors_own_unreadable_data_is_named_exit_2(shared_tmp: Path, own_file: str,
                                                          options: tuple[str, ...]) -> None:
    """An installation the user cannot read (a data file of mode 000): a setup error naming the file, not a bug."""
    _require_permission_checks(shared_tmp)
    installed = shared_tmp / "site"
    shutil.copytree(ROOT / "auditor", installed / "auditor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", installed / "auditor_rules", ignore=shutil.ignore_patterns("__pycache__"))
    (installed / own_file).chmod(0o000)
    manifest = shared_tmp / "svc.yaml"
    manifest.write_text(SERVICE, encoding="utf-8")
    (shared_tmp / "team-exceptions.yaml").write_text("exceptions: []\n", encoding="utf-8")
    # The copy is imported first; as root, capabilities are dropped after exec (exec gives root them back).
    program = (DROP_CAPABILITIES + ("drop_capabilities()\n" if os.geteuid() == 0 else "")
               + f"import sys\nsys.path.insert(0, {str(installed)!r})\n"
               + "from auditor.cli import main\nmain(sys.argv[1:])\n")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("AUDIT_DEBUG", None)
    completed = subprocess.run([sys.executable, "-c", program, str(manifest), *options], capture_output=True, text=True,
                               cwd=shared_tmp, env=env, timeout=TIMEOUT)
    assert completed.returncode == 2, (completed.returncode, completed.stderr)
    assert completed.stderr.startswith(f"audit: error: {installed / own_file}: "), completed.stderr
    assert "Permission denied" in completed.stderr and "internal error" not in completed.stderr
    assert len(completed.stderr.splitlines()) == 1 and completed.stdout == ""


# --- standard input ---------------------------------------------------------------------------


@pytest.mark.parametrize("data, problem", [
    (b"", "<stdin>: empty (no YAML or JSON document)"),
    (b"\x00\x01\x02", "<stdin>: binary file (contains NUL bytes)"),
    (b"\xff\xfe" + "x: 1\n".encode("utf-16-le"), "<stdin>: UTF-16 text, not UTF-8"),
    (b"kind: [\n", "<stdin>:2: invalid YAML"),
    (b'{"kind": "List", "items": [}', "<stdin>:1: invalid JSON"),
    (b"caf\xe9: 1\n", "<stdin>:1: not valid UTF-8"),
    (b"replicaCount: 2\n", "<stdin>: no Kubernetes objects found"),
    (b"&a [*a]\n", "<stdin>:1: recursive alias"),
])
def test_stdin_variants_are_refused(tmp_path: Path, reports: Reports, data: bytes, problem: str) -> None:
    result = audit(tmp_path, reports, "-", stdin=data)
    assert_refused(result, problem)
    reports.untouched()


def test_stdin_from_dev_zero(tmp_path: Path, reports: Reports) -> None:
    result = audit(tmp_path, reports, "-", stdin_file="/dev/zero", fresh=True)
    assert_refused(result, "<stdin>: binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100, result


def test_endless_stdin_pipe_hits_the_size_limit(tmp_path: Path, reports: Reports) -> None:
    def feeder(stream: IO[bytes]) -> None:
        chunk = b"- a\n" * 50_000
        try:
            while True:
                stream.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass

    result = audit(tmp_path, reports, "-", extra=("--max-file-bytes", str(8 * 1024**2)), feeder=feeder)
    assert_refused(result, "<stdin>: larger than the 8,388,608-byte limit")
    reports.untouched()


def test_stdin_pipe_of_zeros_stops_at_the_first_chunk(tmp_path: Path, reports: Reports) -> None:
    def feeder(stream: IO[bytes]) -> None:
        chunk = bytes(1024 * 1024)
        try:
            for _ in range(2_000):  # 2 GB if it were all read
                stream.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass

    result = audit(tmp_path, reports, "-", feeder=feeder, fresh=True)
    assert_refused(result, "<stdin>: binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100, result


def test_stdin_twice_and_no_input(tmp_path: Path, reports: Reports) -> None:
    assert_refused(audit(tmp_path, reports, "-", "-", stdin=SERVICE.encode()),
                   "standard input (-) can be read only once")
    reports.untouched()


def test_valid_stdin_still_works(tmp_path: Path) -> None:
    result = run_measured("-", "--format", "json", cwd=tmp_path, stdin=SERVICE.encode())
    assert result.code == 0, result
    assert json.loads(result.stdout)["target"]["inputs"] == ["<stdin>"]


def test_forked_and_fresh_runs_agree(tmp_path: Path) -> None:
    """The zygote's children behave as `python -m auditor` does: same exit code, same bytes."""
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE.replace("ClusterIP", "NodePort"), encoding="utf-8")
    for args in ([str(path), "--format", "json", "--as-of", "2026-11-29"], [str(path), "--format", "junit"],
                 [str(tmp_path / "missing.yaml")]):
        forked = run_measured(*args, cwd=tmp_path)
        fresh = run_measured(*args, cwd=tmp_path, fresh=True)
        assert (forked.code, forked.stdout, forked.stderr) == (fresh.code, fresh.stdout, fresh.stderr)
        assert fresh.max_rss_mb < 200 and fresh.seconds < MAX_SECONDS, fresh


# --- huge strings in the text report (issue 10, item 7) ------------------------------------------

HUGE_NAME = 2_000_000


def _huge_name_service(tmp_path: Path, length: int = HUGE_NAME) -> Path:
    path = tmp_path / f"name-{length}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Service",
                                "metadata": {"name": "n" * (length - 1) + "z", "namespace": "app"},
                                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("width", [80, 200])
def test_text_report_lays_out_bounded_text_whatever_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             width: int) -> None:
    """The work of the layout (wrapping every line) is counted: bounded by the caps, not by the input.

    Wrapping one unbroken 1.6 MB name once cost 67 s (quadratic in its length); capped, the text handed to
    the layout for a 2 MB name is no more than for a 2 KB one, at any width.
    """
    from auditor.report import text
    from tests.conftest import audit_text

    laid_out: list[int] = []
    wrap = text.wrap

    def counting_wrap(line: str, *args, **options):  # type: ignore[no-untyped-def]
        laid_out.append(len(line))
        return wrap(line, *args, **options)

    monkeypatch.setattr(text, "wrap", counting_wrap)
    work: dict[int, int] = {}
    for length in (HUGE_NAME, 2_000):
        result = audit_text(tmp_path, _huge_name_service(tmp_path, length).read_text(encoding="utf-8"),
                            name="input.json", rules=("lb-service-not-excepted",))
        laid_out.clear()
        report = text.render(result, width=width)
        work[length] = sum(laid_out)
        assert len(report) < 20_000
        shown = report.replace("\n", "").replace(" ", "")
        assert "Service/app/nnnn" in shown and "nnnz" in shown, "head and tail of the name stay visible"
        assert "characterselided" in shown  # both names are over the cap (OBJECT_LIMIT)
    assert laid_out, "the finding went through the layout"
    assert work[HUGE_NAME] <= work[2_000] + 10, work  # only the count in the elision marker grows


def test_elide_keeps_head_tail_and_says_how_much_is_left_out() -> None:
    from auditor.report.text import elide

    assert elide("short", 10) == "short"
    assert elide("x" * 10, 10) == "x" * 10
    long = "h" * 500 + "m" * 1_000_000 + "t" * 500
    shown = elide(long, 400)
    assert len(shown) <= 400 + 10
    assert shown.startswith("h" * 200) and shown.endswith("t" * 90)
    assert f"[... {len(long) - 360:,} characters elided ...]" in shown


def test_two_megabyte_name_in_the_text_report_end_to_end(tmp_path: Path) -> None:
    result = run_measured(str(_huge_name_service(tmp_path)), "--rule", "lb-service-not-excepted", cwd=tmp_path)
    assert result.code == 1 and result.stderr == "", (result.code, result.stderr)
    assert "characters elided" in result.stdout.replace("\n", " ") and len(result.stdout) < 20_000
    assert result.max_rss_mb < MAX_RSS_MB


# --- report destinations (issue 10, item 4) ------------------------------------------------------
# Never the real /dev/null as a file: devices are made in tmp when allowed, reached through a tmp
# symlink, and /dev/null itself is written only after the stream path has been shown not to replace.


def _manifest(tmp_path: Path) -> Path:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE, encoding="utf-8")
    return path


def _same_node(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_dev, before.st_ino, before.st_mode, before.st_rdev) == (
        after.st_dev, after.st_ino, after.st_mode, after.st_rdev)


def test_report_into_a_fifo_is_streamed_and_the_fifo_stays(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there; the small report fits the pipe
    try:
        result = run_measured(str(_manifest(tmp_path)), "--rule", "lb-service-not-excepted", "--json", str(fifo),
                              cwd=tmp_path)
        received = b""
        while chunk := os.read(reader, 65536):
            received += chunk
    finally:
        os.close(reader)
    assert result.code == 0 and result.stderr == "", result
    assert json.loads(received)["summary"]["exitCode"] == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.fifo", "svc.yaml"], "no temporary file left"


def test_fifo_nobody_reads_is_refused_without_hanging_and_nothing_is_written(tmp_path: Path, reports: Reports) -> None:
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--sarif", str(fifo)))
    assert_refused(result, f"{fifo}: cannot write sarif report: it is a FIFO that nothing reads")
    reports.untouched()  # --json and --junit were opened (temporary files) before the FIFO failed: all undone
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_symlinked_report_paths_are_refused_and_their_targets_untouched(tmp_path: Path, reports: Reports) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "report.md"
    os.symlink(precious, link)
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--markdown", str(link)))
    assert_refused(result, f"{link}: cannot write markdown report: it is a symbolic link (to {precious})")
    assert precious.read_text(encoding="utf-8") == "keep me\n" and os.path.islink(link)
    dangling = tmp_path / "dangling.json"
    os.symlink(tmp_path / "nowhere" / "x.json", dangling)
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--prometheus", str(dangling)))
    assert_refused(result, f"{dangling}: cannot write prometheus report: a symbolic link to nothing usable")
    assert not (tmp_path / "nowhere").exists()
    reports.untouched()


def test_a_socket_is_refused_not_replaced(tmp_path: Path, reports: Reports) -> None:
    import socket

    path = tmp_path / "report.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--sarif", str(path)))
    assert_refused(result, f"{path}: cannot write sarif report: it is a socket")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    reports.untouched()


def test_character_devices_are_written_as_streams_never_replaced(tmp_path: Path) -> None:
    manifest = str(_manifest(tmp_path))
    null = os.stat("/dev/null")
    made = tmp_path / "null"
    try:
        os.mknod(made, stat.S_IFCHR | 0o666, null.st_rdev)  # a second node of the null device, ours to lose
    except PermissionError:
        made = None  # type: ignore[assignment]
    if made is not None:
        before = os.lstat(made)
        result = run_measured(manifest, "--json", str(made), "--junit", str(made), cwd=tmp_path)
        assert result.code == 0 and result.stderr == "", result  # two reports to one device corrupt nothing
        assert _same_node(before, os.lstat(made)), "the device node was replaced"
    link = tmp_path / "null.json"  # a symlink to the system's /dev/null: followed, as a stream
    os.symlink("/dev/null", link)
    result = run_measured(manifest, "--json", str(link), cwd=tmp_path)
    assert result.code == 0 and result.stderr == "", result
    assert os.readlink(link) == "/dev/null" and _same_node(null, os.stat("/dev/null"))
    # Shown not to replace a device above: only now /dev/null itself, as the issue reported it.
    result = run_measured(manifest, "--json", "/dev/null", "--sarif", "/dev/null", cwd=tmp_path)
    assert result.code == 0 and result.stderr == "", result
    assert _same_node(null, os.stat("/dev/null")), "/dev/null was replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["svc.yaml", "null.json", *(["null"] if made else [])])


def test_a_report_file_the_user_may_not_write_is_refused(shared_tmp: Path) -> None:
    _require_permission_checks(shared_tmp)
    readonly = shared_tmp / "audit.json"
    readonly.write_text('{"kept": true}\n', encoding="utf-8")
    readonly.chmod(0o444)  # in a folder the user may write: replacing it by rename would succeed
    result = run_measured(str(_manifest(shared_tmp)), "--json", str(readonly), cwd=shared_tmp, unprivileged=True)
    assert_refused(result, f"{readonly}: cannot write json report: Permission denied")
    assert readonly.read_text(encoding="utf-8") == '{"kept": true}\n'


@pytest.mark.parametrize("name", ["json", "junit", "sarif", "markdown", "prometheus", "codequality"])
def test_dash_is_standard_output_for_every_report_option(tmp_path: Path, name: str) -> None:
    manifest = str(_manifest(tmp_path))
    as_format = run_measured(manifest, "--format", name, "--as-of", "2026-11-29", cwd=tmp_path)
    dash = run_measured(manifest, f"--{name}", "-", "--as-of", "2026-11-29", cwd=tmp_path)
    dev_stdout = run_measured(manifest, f"--{name}", "/dev/stdout", "--as-of", "2026-11-29", cwd=tmp_path)
    assert as_format.code == dash.code == dev_stdout.code == 0, (dash, dev_stdout)

    def timeless(text: str) -> str:  # Prometheus' last-run gauge is the one value that changes
        return "\n".join(line for line in text.splitlines() if "_last_run_timestamp_seconds " not in line)

    assert timeless(dash.stdout) == timeless(as_format.stdout) == timeless(dev_stdout.stdout) and dash.stderr == ""
    assert dash.stdout.strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["svc.yaml"], "no file named - (or anything else) written"


@pytest.mark.parametrize("extra, problem", [
    (("--json", "-", "--format", "text"), "two reports to standard output (--format text and --json -)"),
    (("--json", "-", "--sarif", "-"), "two reports to standard output (--json - and --sarif -)"),
    (("--format", "json", "--json", "/dev/stdout"),
     "two reports to standard output (--format json and --json /dev/stdout)"),
    (("--markdown", "same.out", "--prometheus", "./same.out"), "./same.out: --markdown same.out and --prometheus "
                                                               "./same.out would both be written there"),
], ids=["format-and-dash", "two-dashes", "format-and-dev-stdout", "one-file-twice"])
def test_two_reports_in_one_place_are_usage_errors(tmp_path: Path, reports: Reports, extra: tuple[str, ...],
                                                   problem: str) -> None:
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=extra)
    assert_refused(result, problem)
    reports.untouched()
    assert not (tmp_path / "same.out").exists()


def test_report_to_the_file_standard_output_goes_to_is_that_output(tmp_path: Path) -> None:
    """`audit ... --json out.json > out.json`: one report, not a file replaced under the shell's redirection."""
    out = tmp_path / "out.json"
    with open(out, "wb") as stream:
        completed = subprocess.run([sys.executable, "-m", "auditor", str(_manifest(tmp_path)), "--json", str(out)],
                                   stdout=stream, stderr=subprocess.PIPE, cwd=tmp_path, timeout=TIMEOUT,
                                   env={**os.environ, "NO_COLOR": "1"})
    assert completed.returncode == 0, completed.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["summary"]["exitCode"] == 0


def test_a_bad_destination_among_several_leaves_nothing_written(tmp_path: Path, reports: Reports) -> None:
    """Checked first (a link is refused before the input is read), opened next (a FIFO without reader)."""
    link = tmp_path / "link.sarif"
    os.symlink(tmp_path / "elsewhere.sarif", link)
    (tmp_path / "elsewhere.sarif").write_text("old\n", encoding="utf-8")
    fresh = tmp_path / "new" / "deeper" / "audit.md"
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--markdown", str(fresh), "--sarif", str(link)))
    assert_refused(result, f"{link}: cannot write sarif report: it is a symbolic link")
    fifo = tmp_path / "late.fifo"
    os.mkfifo(fifo)
    result = audit(tmp_path, reports, str(_manifest(tmp_path)), extra=("--markdown", str(fresh), "--sarif", str(fifo)))
    assert_refused(result, f"{fifo}: cannot write sarif report: it is a FIFO that nothing reads")
    reports.untouched()
    assert not (tmp_path / "new").exists(), "folders made for a report are removed when the run writes nothing"
    assert (tmp_path / "elsewhere.sarif").read_text(encoding="utf-8") == "old\n"


# --- closed and broken standard streams (issue 10, item 11) ------------------------------------------


def _run_with_closed(fd: int, *args: str, cwd: Path,
                     stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("AUDIT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "auditor", *args], stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=TIMEOUT, preexec_fn=lambda: os.close(fd))


def test_closed_standard_output_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    report = tmp_path / "audit.json"
    completed = _run_with_closed(1, str(_manifest(tmp_path)), "--json", str(report), cwd=tmp_path, stdout=None)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.decode() == ("audit: error: standard output is closed: nowhere to write the text report "
                                         "(redirect it, e.g. >/dev/null, rather than closing it)\n")
    assert not report.exists()


def test_closed_standard_input_is_an_input_error_only_when_read(tmp_path: Path) -> None:
    completed = _run_with_closed(0, "-", cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.decode().startswith("audit: error: <stdin>: standard input is closed")
    assert completed.stdout == b""
    not_read = _run_with_closed(0, str(_manifest(tmp_path)), cwd=tmp_path)
    assert not_read.returncode == 0 and not_read.stderr == b"", not_read.stderr


def test_a_reader_that_goes_away_does_not_change_the_exit_code(tmp_path: Path) -> None:
    """`audit ... | head`: the verdict stands (a failing audit must not exit 0 because head stopped reading)."""
    manifest = tmp_path / "nodeport.yaml"
    manifest.write_text(SERVICE.replace("ClusterIP", "NodePort"), encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write gets EPIPE
    try:
        completed = subprocess.run([sys.executable, "-m", "auditor", str(manifest)], stdout=write_end,
                                   stderr=subprocess.PIPE, cwd=tmp_path, timeout=TIMEOUT,
                                   env={**os.environ, "NO_COLOR": "1"})
    finally:
        os.close(write_end)
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr == b""
