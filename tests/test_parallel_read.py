"""A folder's files parsed by worker processes (`audit --jobs`, auditor.sources.parallel) give what a serial
read gives: the same objects, lines, ignored documents, input problems, GitOps layout and report bytes.

Both paths run in a fresh interpreter (a subprocess): the parallel reader forks only a process without
other threads, and a pytest worker may hold a test server's threads. Nothing here is timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "gitops"
HANG_GUARD = 300  # seconds: a hang, never a speed limit

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web-{i}
  namespace: team-{n}
  labels: &labels
    app: web-{i}
spec:
  type: {kind}
  selector: *labels
  ports:
    - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: team-{n}
spec:
  selector:
    matchLabels: {{app: web-{i}}}
  template:
    metadata:
      labels: {{app: web-{i}}}
    spec:
      containers: [{{name: web, image: "nginx:1.27"}}]
"""

# Files each of which is a problem of its own (or a document ignored), between good ones.
BROKEN = {
    "bad-yaml.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
    "duplicate.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
    "empty.yaml": "",
    "tool.yaml": "tasks: !include other.yaml\n",
    "not-k8s.yaml": "replicas: 3\n",
    "list.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "from-json"}}]}, indent=2),
    "dup.json": '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "name": "b"}}\n',
    "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                 "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
}


def _tree(root: Path, files: int = 150) -> Path:
    """A tree with more files than the parallel threshold: a kustomization, manifests, broken files."""
    apps = root / "apps"
    apps.mkdir(parents=True)
    names = []
    for i in range(files):
        name = f"svc-{i:03d}.yaml"
        kind = "LoadBalancer" if i % 17 == 0 else "NodePort" if i % 11 == 0 else "ClusterIP"
        (apps / name).write_text(SERVICE.format(i=i, n=i % 7, kind=kind))
        names.append(name)
    for name, text in BROKEN.items():
        (apps / name).write_text(text)
    (apps / "binary.yaml").write_bytes(b"\x00\x01binary")
    # Over the workers' size bound: parsed by the main process, in its place in the walk.
    (apps / "big.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: team-0}\n"
                                   f"data:\n  blob: {'x' * 1_100_000}\n")
    # Under the size bound but dense (could build more than PARALLEL_MAX_NODES): the main process too.
    (apps / "dense.yaml").write_text("values: [" + "1," * 120_000 + "1]\n")
    (apps / "kustomization.yaml").write_text("resources:\n" + "".join(f"  - {n}\n" for n in names[:40])
                                             + "  - missing.yaml\n")
    (root / "deep" / "nested" / "folder").mkdir(parents=True)
    (root / "deep" / "nested" / "folder" / "ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: deep}\n")
    return root


def _audit(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=ROOT, capture_output=True,
                          timeout=HANG_GUARD, check=False)


@pytest.mark.parametrize("extra", [
    ["--format", "json"],
    ["--format", "text", "--max-alias-expansion", "50", "--max-yaml-nodes", "120"],
    ["--format", "json", "--strict-input"],  # the first broken file stops the run: the same one, the same line
    ["--format", "json", "--max-files", "100"],  # the file count, refused before anything is reported
])
def test_report_bytes_are_the_same_with_workers(tmp_path: Path, extra: list[str]) -> None:
    tree = str(_tree(tmp_path / "tree"))
    serial = _audit(tree, "--jobs", "1", *extra)
    parallel = _audit(tree, "--jobs", "2", *extra)
    assert serial.stdout or serial.stderr
    assert (parallel.returncode, parallel.stdout, parallel.stderr) == (serial.returncode, serial.stdout, serial.stderr)


def test_gitops_fixture_trees_report_the_same_with_workers(tmp_path: Path) -> None:
    # Each fixture tree padded over the threshold with plain manifests: clusters, scopes and layout as before.
    for fixture in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        tree = tmp_path / fixture.name
        subprocess.run(["cp", "-r", str(fixture), str(tree)], check=True)
        _tree(tree / "zz-padding", files=130)
        serial = _audit(str(tree), "--format", "json", "--jobs", "1")
        parallel = _audit(str(tree), "--format", "json", "--jobs", "2")
        assert (parallel.returncode, parallel.stdout, parallel.stderr) == \
            (serial.returncode, serial.stdout, serial.stderr), fixture.name


# Run in a fresh interpreter: both reads of the same tree, compared field by field, and proof that the
# workers did the parsing (and the main process the file over their size bound).
_COMPARE = textwrap.dedent("""
    import json, sys
    import auditor.sources.parallel as parallel
    from auditor.sources.files import ReadLimits, read_paths
    from auditor.sources.gitops.collect import TreeCollector

    pools, fallbacks = [], []
    real_init, real_next = parallel.Prefetch.__init__, parallel.Prefetch.next
    def init(self, paths, *args):
        pools.append(len(paths))
        real_init(self, paths, *args)
    def next_(self):
        parsed = real_next(self)
        if parsed is None:
            fallbacks.append(1)
        return parsed
    parallel.Prefetch.__init__, parallel.Prefetch.next = init, next_
    parallel.PARALLEL_MIN_FILES = int(sys.argv[3])
    if sys.argv[4]:  # a worker that dies at this file (killed, out of memory): its files are read here
        real_parse = parallel._parse_file
        def parse_or_die(path):
            if path.endswith(sys.argv[4]):
                import os
                os._exit(9)
            return real_parse(path)
        parallel._parse_file = parse_or_die

    def read(jobs):
        collector = TreeCollector(sys.argv[1])
        limits = ReadLimits(jobs=jobs, max_alias_expansion=int(sys.argv[2]))
        snapshot = read_paths([sys.argv[1]], limits=limits, input_problems=True, observer=collector)
        return ([(o.raw, o.source) for o in snapshot.objects], snapshot.ignored, snapshot.input_problems,
                repr(collector.tree()))

    serial = read(1)
    assert not pools
    parallel_read = read(2)
    for part, (a, b) in enumerate(zip(serial, parallel_read)):
        assert a == b, part
    parallel._WORKER_LIMITS = ReadLimits()
    refused = sorted(name for name in ("big.yaml", "dense.yaml", "svc-001.yaml")
                     if parallel._parse_file(sys.argv[1] + "/apps/" + name) is None)
    print(json.dumps({"pools": pools, "fallbacks": len(fallbacks), "refused": refused, "objects": len(serial[0]),
                      "problems": len(serial[2]), "ignored": len(serial[1])}))
""")


def _compare(tree: Path, min_files: int, max_alias_expansion: int = 100_000, die_at: str = "") -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", _COMPARE, str(tree), str(max_alias_expansion), str(min_files),
                           die_at],
                          cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout)
    return result


def test_workers_parse_and_the_read_is_the_same(tmp_path: Path) -> None:
    result = _compare(_tree(tmp_path / "tree"), min_files=128, max_alias_expansion=50)
    files = 150 + len(BROKEN) + 5  # manifests, broken files, binary, big, dense, kustomization, the deep Namespace
    assert result["pools"] == [files]
    # Read by the main process: the files over the workers' bounds, and the chunks it claimed while waiting.
    assert result["refused"] == ["big.yaml", "dense.yaml"]
    assert 2 <= result["fallbacks"] < files
    assert result["objects"] == 2 * 150 + 1 + 1 + 1  # Services and Deployments, the List's, big, deep
    assert result["problems"] == 5  # bad YAML, duplicate keys (YAML, JSON), binary, the alias bomb


def test_small_folders_are_read_serially(tmp_path: Path) -> None:
    result = _compare(_tree(tmp_path / "tree", files=3), min_files=128)
    assert result["pools"] == []
    assert result["objects"] == 2 * 3 + 1 + 1 + 1


def test_a_worker_that_dies_leaves_its_files_to_the_main_process(tmp_path: Path) -> None:
    result = _compare(_tree(tmp_path / "tree"), min_files=128, die_at="svc-050.yaml")
    assert result["pools"] == [150 + len(BROKEN) + 5]
    # The chunk of 16 files it died in is read by the main process, besides what that process claimed.
    assert result["fallbacks"] >= 16 + 2
    assert result["objects"] == 2 * 150 + 1 + 1 + 1
