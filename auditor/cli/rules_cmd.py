"""`audit rules` and `audit explain ID`: what the auditor checks, and why."""

from __future__ import annotations

import json
import textwrap

import click


@click.command()
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules(output_format: str) -> None:
    """List the rules (built-in and plugins)."""
    from auditor.registry import builtin_index, index_entry, plugin_rules

    plugins, broken = plugin_rules()
    entries = builtin_index() + [index_entry(rule) for rule in plugins]
    entries.sort(key=lambda entry: entry["id"])
    if output_format == "json":
        payload = entries + [{"id": p.id, "error": p.reason} for p in broken]
        click.echo(json.dumps(payload, indent=2))
        return
    from tabulate import tabulate

    rows = [[entry["id"], entry["severity"], entry["title"]] for entry in entries]
    rows += [[p.id, "error", f"(broken plugin) {p.reason}"] for p in broken]
    click.echo(tabulate(rows, headers=["ID", "SEVERITY", "TITLE"], tablefmt="simple"))


def _block(title: str, text: str, width: int = 88) -> str:
    return f"{title}\n" + textwrap.fill(text, width=width, initial_indent="  ", subsequent_indent="  ")


@click.command()
@click.argument("rule_id", metavar="ID")
def explain(rule_id: str) -> None:
    """Show one rule's rationale, remediation and examples (from its case file)."""
    from auditor.errors import AuditError
    from auditor.registry import load_rules
    from auditor.testing import explain_examples

    rule = load_rules().by_id(rule_id)
    if rule is None:
        raise AuditError(f"unknown rule {rule_id!r} (see `audit rules`)")
    requires = ", ".join(" or ".join(r) if isinstance(r, tuple) else r for r in rule.requires)
    parts = [
        f"{rule.id} ({rule.severity.value}): {rule.title}",
        "",
        _block("Why", rule.rationale),
        "",
        _block("Fix", rule.remediation),
        "",
        _block("Reads", requires + (f"; also {', '.join(rule.uses)}" if rule.uses else "")),
    ]
    if rule.references:
        parts += ["", "References"] + [f"  {ref}" for ref in rule.references]
    failing, passing = explain_examples(rule)
    if failing:
        parts += ["", "Fails", textwrap.indent(failing.rstrip(), "  ")]
    if passing:
        parts += ["", "Passes", textwrap.indent(passing.rstrip(), "  ")]
    click.echo("\n".join(parts))
