"""`audit version` and `audit --version`: the tool's version and the rule set's.

The rule set version is a digest of what defines the built-in rules as
users meet them: rules/index.json (every rule's id, severity, title, layer,
requirements, the Cilium settings and posture fields it reads) and each
rule's case file (rules/<layer>/cases/<id>.yaml: the failing and passing
examples it is held to). It changes whenever a rule is added, removed,
re-titled, re-graded, reads something else or is held to other cases —
whatever the tool's version string says. A change inside a rule's code
that alters none of these does not change it (the tool's version names the
code). It is the first 12 hex digits of a SHA-256 over each file's path
(relative to the rules package), length and bytes, in sorted order.
Computing it reads ~50 small files and imports nothing.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import resources
from importlib.abc import Traversable
from typing import Any

import click

from auditor import TOOL_NAME, __version__

RULES_PACKAGE = "auditor_rules"


def _rule_files() -> list[tuple[str, Traversable]]:
    """(relative path, file) of rules/index.json and every case file, sorted by path."""
    root = resources.files(RULES_PACKAGE)
    files = [("index.json", root.joinpath("index.json"))]
    for layer in root.iterdir():
        cases = layer.joinpath("cases")
        if layer.is_dir() and cases.is_dir():
            files += [(f"{layer.name}/cases/{case.name}", case) for case in cases.iterdir()
                      if case.name.endswith(".yaml")]
    return sorted(files, key=lambda item: item[0])


def ruleset_version() -> tuple[str, int]:
    """(digest, number of built-in rules) of the installed rule set."""
    digest = hashlib.sha256()
    count = 0
    for name, file in _rule_files():
        data = file.read_bytes()
        digest.update(name.encode("utf-8") + b"\0" + len(data).to_bytes(8, "big") + data)
        if name == "index.json":
            count = len(json.loads(data))
    return digest.hexdigest()[:12], count


def plugins() -> list[dict[str, str]]:
    """Installed rule plugins, from their entry-point metadata (nothing is imported)."""
    from importlib.metadata import entry_points

    from auditor.registry import ENTRY_POINT_GROUP

    found = []
    for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        dist = entry_point.dist
        found.append({"id": entry_point.name, "distribution": dist.name if dist else "?",
                      "version": dist.version if dist else "?"})
    return found


def short_text() -> str:
    """What `audit --version` prints."""
    digest, count = ruleset_version()
    return f"audit {__version__}\nrule set {digest} ({count} built-in rules)\n"


def _details() -> dict[str, Any]:
    digest, count = ruleset_version()
    return {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "ruleSet": {"version": digest, "builtinRules": count},
        "plugins": plugins(),
        "python": platform.python_version(),
    }


def print_short_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """The eager `--version` option: print and stop, before any command runs."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(short_text(), nl=False)
    ctx.exit(0)


@click.command()
@click.option("-o", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def version(output_format: str) -> None:
    """Print the tool's version, the rule set version, the plugins and Python's version.

    The rule set version is a digest of the built-in rules' metadata
    (rules/index.json) and their case files: it changes exactly when what a
    built-in rule checks, or how it is graded, changes.
    """
    details = _details()
    if output_format == "json":
        click.echo(json.dumps(details, indent=2))
        return
    lines = [short_text().rstrip("\n")]
    lines += [f"plugin {p['id']} ({p['distribution']} {p['version']})" for p in details["plugins"]] or ["plugins: none"]
    lines.append(f"python {details['python']}")
    click.echo("\n".join(lines))
