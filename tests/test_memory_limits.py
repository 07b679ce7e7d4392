"""Memory limits that cannot be dodged (issue 10.6), measured as peak RSS of the real command.

Every YAML and JSON input the tool reads (manifests, --cilium-values files,
config files, baselines) is bounded by a node budget counted before parsing.
For each dense shape the budget must hold: a file built to just fit the
budget costs at most a fixed number of bytes per budgeted node (the figures
docs/input.md quotes), and the same shape over the budget is refused in
little memory. Budgets are lowered here so each run stays small; memory
grows linearly with the budget, so the per-node figures carry over to the
defaults. Peak RSS is the operating system's (`resource.getrusage` of a
child), never time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from auditor.parsing.json_docs import estimated_json_nodes
from auditor.parsing.yaml_docs import estimated_nodes
from tests.conftest import AS_OF

# A fresh parent per measurement, so RUSAGE_CHILDREN is this one child alone.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)\n"
    "sys.stderr.write(done.stderr.decode(errors='replace')[-300:])\n"
)


def audit_peak(*args: str) -> tuple[float, int, str]:
    """(peak RSS in MiB, exit code, the end of stderr) of `audit ARGS`."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "auditor", *args,
                           "--format", "json", "--as-of", AS_OF.isoformat()],
                          capture_output=True, text=True, timeout=300)
    peak_kib, code = done.stdout.split()
    return int(peak_kib) / 1024, int(code), done.stderr


@pytest.fixture(scope="module")
def baseline_mib(tmp_path_factory: pytest.TempPathFactory) -> float:
    path = tmp_path_factory.mktemp("base") / "one.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n", encoding="utf-8")
    return min(audit_peak(str(path))[0] for _ in range(2))


def fit(make: Callable[[int], str], estimate: Callable[[str], int], budget: int) -> str:
    """The largest text of a shape whose estimate stays within `budget`."""
    low, high = 1, budget * 2
    while low < high:
        middle = (low + high + 1) // 2
        if estimate(make(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return make(low)


LIST_HEAD = "apiVersion: v1\nkind: List\nitems:\n"
YAML_SHAPES: dict[str, Callable[[int], str]] = {
    # What the old estimate (lines and flow items) let through: 20 nodes a line.
    "dashes on one line": lambda n: "x:\n" + "- - - - - - - - - - - - - - - - - - - a\n" * (n // 20 + 1),
    "flow lists": lambda n: LIST_HEAD[:-1] + " [" + "[]," * n + "]\n",
    "list items that are not objects": lambda n: LIST_HEAD + "-\n" * n,
    "block mapping": lambda n: "".join(f"k{i}: v\n" for i in range(n // 3 + 1)),
    "complex keys": lambda n: "".join(f"? k{i}\n" for i in range(n // 3 + 1)),
    "short strings": lambda n: "x: [" + "ab," * n + "]\n",
}
YAML_BUDGET = 100_000
YAML_BYTES_PER_NODE = 700  # docs/input.md: 2,000,000 nodes, about 1.3 GB at worst


@pytest.mark.parametrize("shape", sorted(YAML_SHAPES))
def test_yaml_memory_stays_within_the_node_budget(tmp_path: Path, baseline_mib: float, shape: str) -> None:
    make = YAML_SHAPES[shape]
    path = tmp_path / "dense.yaml"
    path.write_text(fit(make, estimated_nodes, YAML_BUDGET), encoding="utf-8")
    peak, code, stderr = audit_peak(str(path), "--max-yaml-nodes", str(YAML_BUDGET))
    assert code in (0, 1, 2, 3) and "Traceback" not in stderr, stderr
    assert peak - baseline_mib <= YAML_BUDGET * YAML_BYTES_PER_NODE / 2**20, (shape, peak, stderr)
    path.write_text(make(YAML_BUDGET * 2), encoding="utf-8")
    peak, code, stderr = audit_peak(str(path), "--max-yaml-nodes", str(YAML_BUDGET))
    assert code == 2 and "over the 100,000-node limit (see --max-yaml-nodes)" in stderr, stderr
    assert peak - baseline_mib < 40, (shape, peak)


JSON_HEAD = '{"apiVersion":"v1","kind":"List","items":['
JSON_SHAPES: dict[str, Callable[[int], str]] = {
    "empty objects": lambda n: JSON_HEAD + ",".join(["{}"] * n) + "]}",
    "objects on their own lines": lambda n: JSON_HEAD + "\n" + ",\n".join(["    {}"] * n) + "\n]}",
    "one-key objects": lambda n: JSON_HEAD + ",".join(['{"a":1}'] * n) + "]}",
    "nulls": lambda n: JSON_HEAD + ",".join(["null"] * n) + "]}",
    "short strings": lambda n: '{"a":[' + ",".join(['"ab"'] * n) + "]}",
    "nested arrays": lambda n: '{"a":[' + ",".join(["[[]]"] * n) + "]}",
}
JSON_BUDGET = 400_000
JSON_BYTES_PER_NODE = 200  # docs/input.md: 14,000,000 values, about 2 GB at worst


@pytest.mark.parametrize("shape", sorted(JSON_SHAPES))
def test_json_memory_stays_within_the_value_budget(tmp_path: Path, baseline_mib: float, shape: str) -> None:
    """A 30 MB JSON file reached 3 GB: JSON had a byte limit only."""
    make = JSON_SHAPES[shape]
    path = tmp_path / "dense.json"
    path.write_text(fit(make, estimated_json_nodes, JSON_BUDGET), encoding="utf-8")
    peak, code, stderr = audit_peak(str(path), "--max-json-nodes", str(JSON_BUDGET))
    assert code in (0, 1, 2, 3) and "Traceback" not in stderr, stderr
    assert peak - baseline_mib <= JSON_BUDGET * JSON_BYTES_PER_NODE / 2**20, (shape, peak, stderr)
    path.write_text(make(JSON_BUDGET * 2), encoding="utf-8")
    peak, code, stderr = audit_peak(str(path), "--max-json-nodes", str(JSON_BUDGET))
    assert code == 2 and "over the 400,000-value limit (see --max-json-nodes)" in stderr, stderr
    assert peak - baseline_mib < 40, (shape, peak)


def test_a_dense_json_file_is_refused_at_the_default_budget(tmp_path: Path, baseline_mib: float) -> None:
    path = tmp_path / "dense.json"
    path.write_text(JSON_HEAD + ",".join(["{}"] * 7_100_000) + "]}", encoding="utf-8")  # 21 MB
    peak, code, stderr = audit_peak(str(path))
    assert code == 2 and "over the 14,000,000-value limit" in stderr, stderr
    assert peak - baseline_mib < 80, peak


def _service_manifest(tmp_path: Path) -> str:
    path = tmp_path / "svc.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\nspec: {type: ClusterIP}\n",
                    encoding="utf-8")
    return str(path)


def test_cilium_values_files_have_the_node_budget(tmp_path: Path, baseline_mib: float) -> None:
    """A 12 MB --cilium-values file had no node limit at all."""
    values = tmp_path / "values.yaml"
    values.write_text("x:\n" + "- - - - - - - - - - - - - - - - - - - a\n" * 120_000, encoding="utf-8")  # 4.8 MB
    peak, code, stderr = audit_peak(_service_manifest(tmp_path), "--cilium-values", str(values))
    assert code == 2 and "over the 2,000,000-node limit" in stderr and "values.yaml" in stderr, stderr
    assert peak - baseline_mib < 60, peak


def test_deep_values_keep_their_lines_in_linear_memory(tmp_path: Path, baseline_mib: float) -> None:
    """The line of every node of a values file was kept under its whole path: 900 levels deep, gigabytes."""
    values = tmp_path / "values.yaml"
    values.write_text("{a: " * 900 + "[" + "1," * 100_000 + "1]" + "}" * 900 + "\n", encoding="utf-8")
    peak, code, stderr = audit_peak(_service_manifest(tmp_path), "--cilium-values", str(values))
    assert code in (0, 1, 3), stderr
    assert peak - baseline_mib < 120, peak


def test_config_files_have_the_node_budget(tmp_path: Path, baseline_mib: float) -> None:
    exceptions = tmp_path / "exceptions.yaml"
    exceptions.write_text("exceptions:\n" + "- - - - - - - - - - - - - - - - - - - a\n" * 100_000, encoding="utf-8")
    peak, code, stderr = audit_peak(_service_manifest(tmp_path), "--exceptions", str(exceptions))
    assert code == 2 and "over the 2,000,000-node limit" in stderr, stderr
    assert peak - baseline_mib < 60, peak


def test_baselines_have_the_value_budget(tmp_path: Path, baseline_mib: float) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"reportVersion": 1}) [:-1] + ', "x": [' + ",".join(["[]"] * 7_100_000) + "]}",
                        encoding="utf-8")
    peak, code, stderr = audit_peak(_service_manifest(tmp_path), "--baseline", str(baseline))
    assert code == 2 and "over the 14,000,000-value limit" in stderr, stderr
    assert peak - baseline_mib < 80, peak
