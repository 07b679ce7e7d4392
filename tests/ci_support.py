"""Helpers shared by the CI-integration tests (reports, baselines, plugins, deploy manifests).

The inputs are the GitOps trees in tests/fixtures/ci/ (README there): `main/`
(the default branch) and `mr/` (a merge request that fixes two findings and
adds two). Tests that assert exact findings pin `CORE_RULES`, so rules added
later do not change their expectations; schema and parser checks run every
registered rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIXTURES, ROOT, CliResult, run_cli

CI = FIXTURES / "ci"
AS_OF_ARGS = ("--as-of", "2026-11-29")
CORE_RULES = (
    "etp-local-under-l2",
    "kube-proxy-leftover",
    "lb-pool-v2alpha1",
    "lb-service-not-excepted",
    "namespace-missing-default-deny",
    "nodeport-service-not-excepted",
)
REPORT_FORMATS = ("json", "junit", "sarif", "markdown", "prometheus")


@dataclass
class CiRun:
    cli: CliResult
    files: dict[str, Path]

    def json(self) -> dict:
        return json.loads(self.files["json"].read_text(encoding="utf-8"))

    def text(self, name: str) -> str:
        return self.files[name].read_text(encoding="utf-8")


def rule_args(rules: tuple[str, ...] | None) -> list[str]:
    return [arg for rule in (rules or ()) for arg in ("--rule", rule)]


def audit_ci(out_dir: Path, *inputs: str, rules: tuple[str, ...] | None = CORE_RULES, formats=REPORT_FORMATS,
             extra: tuple[str, ...] = (), env: dict | None = None, cwd: Path = CI) -> CiRun:
    """Audit `inputs` (relative to tests/fixtures/ci) like CI would, writing every report format to `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: out_dir / f"audit.{name}" for name in formats}
    args = [*inputs, "--exceptions", str(CI / "exceptions.yaml"), *AS_OF_ARGS, *rule_args(rules), *extra]
    for name, path in files.items():
        args += [f"--{name}", str(path)]
    return CiRun(run_cli(*args, cwd=cwd, env=env), files)


def finding_keys(report: dict, status: str | None = None) -> set[tuple[str, str]]:
    """(rule, Kind/namespace/name) of the report's findings."""
    out = set()
    for finding in report["findings"]:
        if status is None or finding["status"] == status:
            obj = finding["object"]
            display = f"{obj['kind']}/{obj['namespace']}/{obj['name']}" if obj["namespace"] else f"{obj['kind']}/{obj['name']}"
            out.add((finding["rule"], display))
    return out


def report_validator():
    import jsonschema

    from auditor.config_files import load_schema

    return jsonschema.Draft202012Validator(load_schema("report.schema.json"), format_checker=jsonschema.FormatChecker())


__all__ = ["CI", "ROOT", "AS_OF_ARGS", "CORE_RULES", "REPORT_FORMATS", "CiRun", "audit_ci", "finding_keys",
           "report_validator", "rule_args"]
