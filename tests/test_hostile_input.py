"""Hostile input is refused cleanly, in bounded memory and time (issue 6; docs/input.md).

Every case runs the command in its own process and checks what a user sees:
exit 2, one line on stderr naming the file (`audit: error: PATH...`), no
traceback, nothing on stdout, and no report written to `--json`/`--junit` (an
existing report is left as it was). Peak memory (the child's ru_maxrss, as
getrusage reports it through os.wait4) and wall time are measured and bounded
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
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import ROOT

MAX_RSS_MB = 500
MAX_SECONDS = 30
TIMEOUT = 90
ADDRESS_SPACE_LIMIT = 4 * 1024**3  # the child is stopped by MemoryError long before the machine suffers
NOBODY = 65534

SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {type: ClusterIP, ports: [{port: 80}]}
"""

ZYGOTE = r'''
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
            if request["uid"] is not None:
                os.setgroups([])
                os.setgid(request["uid"])
                os.setuid(request["uid"])
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

    def run(self, args: list[str], cwd: Path, stdin: str, stdout: str, stderr: str, uid: int | None) -> dict:
        assert self.process.stdin is not None
        request = {"args": args, "cwd": str(cwd), "stdin": stdin, "stdout": stdout, "stderr": stderr, "uid": uid,
                   "timeout": TIMEOUT, "address_space": ADDRESS_SPACE_LIMIT}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        answer = json.loads(self._readline(TIMEOUT + 60))
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
def zygote():
    _ZYGOTE.append(Zygote())
    yield _ZYGOTE[0]
    _ZYGOTE.pop().close()


def _child_limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def _run_fresh(args: list[str], cwd: Path, stdin_arg: object, out, err, feeder) -> tuple[int, float, float]:
    """`python -m auditor ARGS` in a new interpreter: exit code, seconds, peak RSS (MB)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("AUDIT_DEBUG", None)
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "auditor", *args], stdin=stdin_arg, stdout=out, stderr=err,
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
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return process.returncode, time.monotonic() - started, usage.ru_maxrss / 1024


def run_measured(*args: str, cwd: Path, stdin: bytes | None = None, stdin_file: str | None = None,
                 feeder: Callable[[object], None] | None = None, uid: int | None = None,
                 fresh: bool = False) -> Measured:
    """Run the auditor on ARGS in its own process: exit code, output, wall time and peak RSS."""
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
            answer = _ZYGOTE[0].run(list(args), cwd, stdin_path, out_path, err_path, uid)
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


@pytest.fixture
def reports(tmp_path: Path):
    """`--json`/`--junit` options, and a check that nothing was written (a stale report stays as it was)."""
    out = tmp_path / "reports"
    out.mkdir()
    stale = out / "audit.json"
    stale.write_text('{"stale": true}\n', encoding="utf-8")
    junit = out / "sub" / "audit.xml"

    class Reports:
        args = ("--json", str(stale), "--junit", str(junit))

        @staticmethod
        def untouched() -> None:
            assert stale.read_text(encoding="utf-8") == '{"stale": true}\n'
            assert not junit.exists() and not junit.parent.exists()
            assert sorted(p.name for p in out.iterdir()) == ["audit.json"], "no temporary file left behind"

    return Reports


def audit(tmp_path: Path, reports, *paths: str, extra: tuple[str, ...] = (), **kwargs) -> Measured:
    return run_measured(*paths, *reports.args, *extra, cwd=tmp_path, **kwargs)


# --- YAML alias bombs ------------------------------------------------------------


def billion_laughs(depth: int, width: int = 10) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: app}\ndata:\n" + "".join(
        f"  {line}\n" for line in lines
    )


@pytest.mark.parametrize("depth", [6, 9, 20])
def test_billion_laughs_is_refused(tmp_path: Path, reports, depth: int) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(depth), encoding="utf-8")
    result = audit(tmp_path, reports, str(path))
    assert_refused(result, f"{path}:", "aliases expand the document by more than 100,000 nodes")
    reports.untouched()


def test_small_alias_bomb_refused_under_a_lower_limit(tmp_path: Path, reports) -> None:
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
def test_recursive_alias_is_refused(tmp_path: Path, reports, text: str) -> None:
    path = tmp_path / "recursive.yaml"
    path.write_text(text, encoding="utf-8")
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}:", "recursive alias")
    reports.untouched()


def test_merge_key_bomb_is_refused(tmp_path: Path, reports) -> None:
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
    ("indent.yaml", "".join(" " * i + "a:\n" for i in range(1_500)) + " " * 1_500 + "x\n", "exceeded maximum nesting depth"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("deepobj.json", '{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    ("deepitems.json", '{"kind":"List","apiVersion":"v1","items":[' + "[" * 100_000 + "]" * 100_000 + "]}",
     "nested too deeply"),
])
def test_deep_nesting_is_refused(tmp_path: Path, reports, name: str, text: str, problem: str) -> None:
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
    text = f"apiVersion: v1\nkind: Service\nmetadata: {{name: deep, namespace: app}}\n{section}:\n  {key}: {_deep(990)}\n"
    if section == "metadata":
        text = f"apiVersion: v1\nkind: Service\nmetadata:\n  name: deep\n  namespace: app\n  {key}: {_deep(990)}\nspec: {{type: NodePort}}\n"
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


def test_one_gigabyte_file_is_refused_before_reading(tmp_path: Path, reports) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as stream:
        stream.truncate(1024**3)  # sparse: nothing is written
    result = audit(tmp_path, reports, str(path), fresh=True)
    assert_refused(result, f"{path}:", "1,073,741,824 bytes, over the 805,306,368-byte limit", "--max-file-bytes")
    assert result.max_rss_mb < 100 and result.seconds < 10, result
    reports.untouched()


def test_node_dense_yaml_is_refused_before_parsing(tmp_path: Path, reports) -> None:
    """8 MB of `[],` would build ~2.7 million nodes (about 2 GB in libyaml's graph):
    refused from a cheap count, in bounded memory, before any parsing."""
    path = tmp_path / "dense.yaml"
    path.write_text("[" + "[]," * 2_700_000 + "[]]\n", encoding="utf-8")
    result = audit(tmp_path, reports, str(path), fresh=True)
    assert_refused(result, f"{path}:", "YAML nodes (lines and flow items), over the 2,000,000-node limit", "--max-yaml-nodes")
    assert result.max_rss_mb < 150 and result.seconds < 10, result
    reports.untouched()


def test_max_file_bytes_is_the_limit(tmp_path: Path, reports) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE, encoding="utf-8")
    size = path.stat().st_size
    assert_refused(audit(tmp_path, reports, str(path), extra=("--max-file-bytes", str(size - 1))), f"{path}:",
                   f"over the {size - 1:,}-byte limit")
    ok = audit(tmp_path, reports, str(path), extra=("--max-file-bytes", str(size)))
    assert ok.code == 0, ok


def test_dev_zero_is_refused_without_reading_it_all(tmp_path: Path, reports) -> None:
    result = audit(tmp_path, reports, "/dev/zero", fresh=True)
    assert_refused(result, "/dev/zero:", "binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100, f"read far more than one chunk: {result.max_rss_mb:.0f} MB"
    reports.untouched()


def test_endless_text_stream_hits_the_size_limit(tmp_path: Path, reports) -> None:
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


def test_fifo_given_as_input_is_read_like_a_pipe(tmp_path: Path, reports) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as stream:
            stream.write(SERVICE.encode())

    threading.Thread(target=writer, daemon=True).start()
    result = audit(tmp_path, reports, str(fifo), "--format", "json")
    assert result.code == 0 and result.stderr == "", result


def test_fifo_and_device_in_a_folder_are_refused_not_read(tmp_path: Path, reports) -> None:
    """A checked-out repository with a FIFO in it must not hang the walk (nobody writes to it)."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "a-service.yaml").write_text(SERVICE, encoding="utf-8")
    os.mkfifo(folder / "b-fifo.yaml")
    result = audit(tmp_path, reports, str(folder))
    assert_refused(result, f"{folder / 'b-fifo.yaml'}:", "a FIFO, not a regular file")
    os.unlink(folder / "b-fifo.yaml")
    os.symlink("/dev/zero", folder / "c-zero.yaml")
    result = audit(tmp_path, reports, str(folder))
    assert_refused(result, f"{folder / 'c-zero.yaml'}:", "a character device, not a regular file")
    reports.untouched()


def test_symlink_loops_in_a_folder_end(tmp_path: Path, reports) -> None:
    folder = tmp_path / "repo"
    (folder / "apps" / "web").mkdir(parents=True)
    (folder / "apps" / "web" / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    os.symlink("..", folder / "apps" / "web" / "up")  # a loop through the parent
    os.symlink(str(folder), folder / "apps" / "root")  # a loop to the top
    os.symlink("self", folder / "apps" / "self")  # a link to itself (not .yaml: not read)
    result = run_measured(str(folder), "--format", "json", cwd=tmp_path)
    assert result.code == 0 and result.stderr == "", result
    report = json.loads(result.stdout)
    assert report["summary"]["rulesError"] == 0
    assert result.seconds < MAX_SECONDS and result.max_rss_mb < MAX_RSS_MB
    os.symlink("loop.yaml", folder / "loop.yaml")  # a manifest name that is a link to itself
    assert_refused(audit(tmp_path, reports, str(folder)), f"{folder / 'loop.yaml'}:", "Too many levels of symbolic links")
    reports.untouched()


def test_dangling_and_looping_paths_on_the_command_line(tmp_path: Path, reports) -> None:
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
    ("dup.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  type: ClusterIP\n  type: LoadBalancer\n",
     ":6: duplicate key 'type' (first at line 5)"),
    ("dup.json", b'{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},\n"spec": {"type": "A", "type": "B"}}',
     ":2: duplicate key 'type'"),
    ("dupitems.json", b'{"apiVersion": "v1", "kind": "List", "items": [],\n "items": []}', ":2: duplicate key 'items'"),
    ("nonobjects.json", b'{"apiVersion": "v1", "kind": "List", "items": [1, "x", null, [], {"kind": 3}]}',
     ": no Kubernetes objects found (5 documents ignored"),
    ("values.yaml", b"replicaCount: 2\nimage: {tag: v1}\n", ": no Kubernetes objects found (1 documents ignored"),
    ("bigint.json", b'{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": '
     + b"9" * 5000 + b"}]}}", ":1: invalid JSON: integer too large"),
    ("hexint.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: !!int 0x" + b"f" * 4000 + b"}]}\n",
     ":4: invalid YAML: integer too large"),
    ("sexagesimal.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: !!int 1" + b":1" * 300_000
     + b"}]}\n", ":4: invalid YAML: invalid integer '1:1:1"),
    ("badbool.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {publishNotReadyAddresses: !!bool maybe}\n",
     ":4: invalid YAML: invalid boolean 'maybe'"),
    ("surrogate.json", b'{"apiVersion": "v1", "kind": "Service",\n "metadata": {"name": "x\\ud800"}}',
     ":2: invalid JSON: string holds a lone UTF-16 surrogate \\ud800"),
])
def test_unreadable_content_is_refused(tmp_path: Path, reports, name: str, data: bytes, problem: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert_refused(audit(tmp_path, reports, str(path)), f"{path}{problem}")
    reports.untouched()


def test_utf8_with_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + SERVICE.encode())
    result = run_measured(str(path), cwd=tmp_path)
    assert result.code == 0 and result.stderr == "", result


def test_file_name_with_a_newline_stays_one_line(tmp_path: Path, reports) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "bad\nname.yaml").write_text("kind: [\n", encoding="utf-8")
    result = audit(tmp_path, reports, str(folder))
    assert_refused(result, f"{folder}/bad\\nname.yaml:2: invalid YAML")
    reports.untouched()


# --- many files ----------------------------------------------------------------------------


def test_more_files_than_max_files_is_refused(tmp_path: Path, reports) -> None:
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


def _unprivileged() -> int | None:
    """The uid to run as: None when not root (chmod is enough), nobody when root (root reads everything)."""
    if os.geteuid() != 0:
        return None
    probe = run_measured("--version", cwd=ROOT, uid=NOBODY)
    if probe.code != 0:
        pytest.skip(f"running as root and the auditor cannot run as nobody: {probe.stderr[-200:]}")
    return NOBODY


@pytest.fixture
def shared_tmp():
    """A temporary folder another user can traverse (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="audit-perm-"))
    path.chmod(0o755)
    yield path
    for child in path.rglob("*"):
        if child.is_dir() and not child.is_symlink():
            child.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


def test_unreadable_file_folder_and_path(shared_tmp: Path) -> None:
    user = _unprivileged()
    out = shared_tmp / "out"
    out.mkdir()
    out.chmod(0o777)
    report_args = ("--json", str(out / "audit.json"))

    unreadable = shared_tmp / "secret.yaml"
    unreadable.write_text(SERVICE, encoding="utf-8")
    unreadable.chmod(0o000)
    result = run_measured(str(unreadable), *report_args, cwd=ROOT, uid=user)
    assert_refused(result, f"{unreadable}:", "cannot read: Permission denied")

    folder = shared_tmp / "locked"
    folder.mkdir()
    (folder / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    folder.chmod(0o000)
    result = run_measured(str(folder), *report_args, cwd=ROOT, uid=user)
    assert_refused(result, f"{folder}:", "cannot read folder: Permission denied")

    inside = shared_tmp / "closed" / "svc.yaml"  # a folder that can be listed but not traversed
    inside.parent.mkdir()
    inside.write_text(SERVICE, encoding="utf-8")
    inside.parent.chmod(0o644)
    result = run_measured(str(inside), *report_args, cwd=ROOT, uid=user)
    assert_refused(result, f"{inside}:", "cannot read: Permission denied")

    nested = shared_tmp / "repo"
    (nested / "team").mkdir(parents=True)
    (nested / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    (nested / "team" / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    (nested / "team").chmod(0o000)
    result = run_measured(str(nested), *report_args, cwd=ROOT, uid=user)
    assert_refused(result, f"{nested / 'team'}:", "cannot read folder: Permission denied")
    assert list(out.iterdir()) == []


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
def test_stdin_variants_are_refused(tmp_path: Path, reports, data: bytes, problem: str) -> None:
    result = audit(tmp_path, reports, "-", stdin=data)
    assert_refused(result, problem)
    reports.untouched()


def test_stdin_from_dev_zero(tmp_path: Path, reports) -> None:
    result = audit(tmp_path, reports, "-", stdin_file="/dev/zero", fresh=True)
    assert_refused(result, "<stdin>: binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100, result


def test_endless_stdin_pipe_hits_the_size_limit(tmp_path: Path, reports) -> None:
    def feeder(stream) -> None:
        chunk = b"- a\n" * 50_000
        try:
            while True:
                stream.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass

    result = audit(tmp_path, reports, "-", extra=("--max-file-bytes", str(8 * 1024**2)), feeder=feeder)
    assert_refused(result, "<stdin>: larger than the 8,388,608-byte limit")
    reports.untouched()


def test_stdin_pipe_of_zeros_stops_at_the_first_chunk(tmp_path: Path, reports) -> None:
    def feeder(stream) -> None:
        chunk = bytes(1024 * 1024)
        try:
            for _ in range(2_000):  # 2 GB if it were all read
                stream.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass

    result = audit(tmp_path, reports, "-", feeder=feeder, fresh=True)
    assert_refused(result, "<stdin>: binary file (contains NUL bytes)")
    assert result.max_rss_mb < 100 and result.seconds < 10, result


def test_stdin_twice_and_no_input(tmp_path: Path, reports) -> None:
    assert_refused(audit(tmp_path, reports, "-", "-", stdin=SERVICE.encode()), "standard input (-) can be read only once")
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
