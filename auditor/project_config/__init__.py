"""The project configuration file, `.cilium-audit.yaml` (docs/config.md).

One file says what a repository (or a cluster) audits and how: paths and
excludes, clusters, rule selection, severities, the gate (`failOn`,
`requireComplete` with the rules not applicable here), the posture and the
exception files. It is found as yamllint and ruff find theirs: walking up
from the audited path to the repository root (a folder holding `.git`) or the
filesystem root; `--config FILE` and `AUDIT_CONFIG` name it instead (flag >
env > discovered). Relative paths in it are relative to its folder.

Loading is cheap when there is no file: discovery is a few `stat` calls, and
jsonschema is imported only to validate a file that exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from auditor.config_files import load_validated, unknown_rule
from auditor.errors import ConfigError
from auditor.parsing.yaml_docs import LocatedConfig

FILE_NAME = ".cilium-audit.yaml"
ENV_VAR = "AUDIT_CONFIG"
SCHEMA = "config.schema.json"
WHAT = "config"
INLINE = "inline"  # the value of `posture` when the posture is written in the file itself


@dataclass(frozen=True)
class Located:
    """A configuration file to read, and how it was chosen (`flag --config`, `env AUDIT_CONFIG`, `discovered`)."""

    path: str
    chosen_by: str


def display_path(path: str) -> str:
    """`path` relative to the working folder when it is below it, else absolute (as reports name files)."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative == ".." or relative.startswith(".." + os.sep) else relative


def _start_folder(paths: Sequence[str]) -> str:
    """The folder the search starts from: the common folder of the audited paths, else the working folder."""
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in paths if p != "-"]
    if not folders:
        return os.getcwd()
    return os.path.commonpath(folders)


def discover(paths: Sequence[str]) -> str | None:
    """The `.cilium-audit.yaml` nearest above the audited `paths`, stopping at the repository root
    (a folder holding `.git`) or the filesystem root, as yamllint's and ruff's searches stop."""
    folder = _start_folder(paths)
    while True:
        candidate = os.path.join(folder, FILE_NAME)
        if os.path.isfile(candidate):
            return display_path(candidate)
        if os.path.exists(os.path.join(folder, ".git")):
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def locate(flag: str | None, paths: Sequence[str], environ: dict[str, str] | None = None) -> Located | None:
    """The configuration file in force: `--config FILE`, else `AUDIT_CONFIG`, else the one discovered."""
    environ = dict(os.environ) if environ is None else environ
    if flag:
        return Located(flag, "flag --config")
    if environ.get(ENV_VAR):
        return Located(environ[ENV_VAR], f"env {ENV_VAR}")
    found = discover(paths)
    return Located(found, "discovered") if found is not None else None


@dataclass(frozen=True)
class Value:
    """One value of the file and where it was written (`FILE:LINE`)."""

    value: Any
    origin: str


@dataclass
class ProjectConfig:
    """A loaded, valid configuration file. Every path is resolved against the file's folder."""

    path: str
    chosen_by: str
    located: LocatedConfig
    values: dict[str, Value] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path) or "."

    def where(self, *key: str | int) -> str:
        line = self.located.line_of(tuple(key))
        return f"{self.path}:{line}" if line else self.path

    def resolve(self, relative: str) -> str:
        """A path written in the file, as the run names it (relative to the file's folder)."""
        if os.path.isabs(relative):
            return os.path.normpath(relative)
        return display_path(os.path.join(self.folder, relative))

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    def check_rules(self, known_rule_ids: Collection[str]) -> None:
        """Refuse every rule id of the file that is no rule (skip, only, severity, notApplicable)."""
        data = self.located.data or {}
        references: list[tuple[tuple[str | int, ...], str]] = []
        for key in ("only", "skip"):
            references += [(("rules", key, i), rule) for i, rule in enumerate(data.get("rules", {}).get(key, []))]
        references += [(("severity", rule), rule) for rule in data.get("severity", {})]
        complete = data.get("requireComplete")
        if isinstance(complete, dict):
            references += [(("requireComplete", "notApplicable", rule), rule)
                           for rule in complete.get("notApplicable", {})]
        for path, rule in references:
            if rule not in known_rule_ids:
                field_name = ".".join(str(k) if isinstance(k, str) else f"[{k}]" for k in path).replace(".[", "[")
                raise ConfigError(f"{self.where(*path)}: {WHAT}: {field_name}: {unknown_rule(rule, known_rule_ids)}")


def load(located: Located) -> ProjectConfig:
    """The configuration file `located`, validated (one-line ConfigError naming file:line and field)."""
    path = display_path(located.path) if os.path.exists(located.path) else located.path
    if not os.path.isfile(path):
        what = "is a folder" if os.path.isdir(path) else "no such file"
        raise ConfigError(f"{path}: {WHAT}: {what} (chosen by {located.chosen_by})")
    config = load_validated(path, SCHEMA, WHAT)
    if config.data is None:
        config = LocatedConfig({}, config.lines)
    project = ProjectConfig(path, located.chosen_by, config)
    _read_values(project)
    return project


def _read_values(project: ProjectConfig) -> None:
    data: dict[str, Any] = project.located.data
    values = project.values

    def put(key: str, value: Any, *where: str | int) -> None:
        values[key] = Value(value, project.where(*where))

    if "paths" in data:
        put("paths", tuple(project.resolve(p) for p in data["paths"]), "paths")
    if "exclude" in data:
        put("exclude", tuple(data["exclude"]), "exclude")
    if "clusters" in data:
        put("clusters", tuple((name, project.resolve(p)) for name, p in data["clusters"].items()), "clusters")
    rules = data.get("rules", {})
    for key in ("only", "skip"):
        if key in rules:
            put(f"rules.{key}", tuple(rules[key]), "rules", key)
    if "severity" in data:
        levels = data["severity"].items()
        put("severity", {rule: Value(level, project.where("severity", rule)) for rule, level in levels}, "severity")
    if "failOn" in data:
        put("failOn", data["failOn"], "failOn")
    _read_require_complete(project, data.get("requireComplete"))
    posture = data.get("posture")
    if isinstance(posture, str):
        put("posture", project.resolve(posture), "posture")
    elif isinstance(posture, dict):
        put("posture", INLINE, "posture")
    if "exceptions" in data:
        put("exceptions", tuple(Value(project.resolve(p), project.where("exceptions", i))
                                for i, p in enumerate(data["exceptions"])), "exceptions")


def _read_require_complete(project: ProjectConfig, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool):
        project.values["requireComplete"] = Value(value, project.where("requireComplete"))
        return
    project.values["requireComplete"] = Value(value.get("enabled", True), project.where("requireComplete"))
    reasons = value.get("notApplicable", {})
    for rule, reason in reasons.items():
        if not reason.strip():
            raise ConfigError(f"{project.where('requireComplete', 'notApplicable', rule)}: {WHAT}: "
                              f"requireComplete.notApplicable.{rule}: the reason is empty")
    if reasons:
        project.values["notApplicable"] = Value(
            {rule: Value(reason.strip(), project.where("requireComplete", "notApplicable", rule))
             for rule, reason in reasons.items()},
            project.where("requireComplete", "notApplicable"))


def inline_posture(project: ProjectConfig) -> LocatedConfig:
    """The inline `posture:` mapping as a config document of its own, its lines those of the file."""
    lines = {key[1:]: line for key, line in project.located.lines.items() if key[:1] == ("posture",)}
    return LocatedConfig(project.located.data["posture"], lines)


def excluder(folder: str, patterns: Sequence[str]) -> Callable[[str], bool] | None:
    """Whether a path is excluded by `patterns` (globs relative to `folder`, docs/config.md); None: no pattern.

    A pattern without a slash matches a file or folder name at any depth (`values.yaml`, `*.sops.yaml`);
    one with a slash matches the path from `folder` (`docs/**`, `clusters/*/secrets`), `*` crossing folders.
    """
    if not patterns:
        return None
    root = os.path.abspath(folder)
    names = tuple(p for p in patterns if "/" not in p.strip("/"))
    paths = tuple(p.strip("/").removeprefix("./") for p in patterns if "/" in p.strip("/"))

    def excluded(path: str) -> bool:
        if any(fnmatchcase(os.path.basename(path), pattern) for pattern in names):
            return True
        relative = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
        if relative.startswith("../"):
            return False
        return any(fnmatchcase(relative, pattern) or fnmatchcase(relative, pattern.removesuffix("/**"))
                   for pattern in paths)

    return excluded
