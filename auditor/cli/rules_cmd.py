"""`audit rules` and `audit explain ID`: what the auditor checks, and why."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import click

from auditor.cli.completion import RULE_ID

Entry = dict[str, Any]  # a rule as rules/index.json lists it (auditor.registry.index_entry)


def _layers(entries: list[Entry]) -> list[tuple[str, str, list[Entry]]]:
    """(layer, what it guards, its entries) in the order of the platform's chain; plugins last."""
    import importlib

    from auditor.registry import PLUGIN_LAYER, builtin_layers

    groups: list[tuple[str, str, list[Entry]]] = []
    for layer in (*builtin_layers(), PLUGIN_LAYER):
        members = [entry for entry in entries if entry.get("layer", PLUGIN_LAYER) == layer]
        if not members:
            continue
        if layer == PLUGIN_LAYER:
            about = "Rules from plugins (the cilium_auditor.rules entry-point group)."
        else:
            doc = importlib.import_module(f"auditor_rules.{layer}").__doc__ or ""
            about = doc.strip().splitlines()[0] if doc.strip() else ""
        groups.append((layer, about, members))
    return groups


@click.command()
@click.option("-o", "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--by-layer", is_flag=True,
              help="Group the rules by the layer they guard (datapath, lbipam, l2, gateway, policy, exposure, "
                   "leftovers; plugins last).")
def rules(output_format: str, by_layer: bool) -> None:
    """List the rules (built-in and plugins)."""
    from auditor.registry import PLUGIN_LAYER, builtin_index, index_entry, plugin_rules

    plugins, broken = plugin_rules()
    entries = builtin_index() + [index_entry(rule) for rule in plugins]
    entries.sort(key=lambda entry: entry["id"])
    failed: list[Entry] = [{"id": p.id, "layer": PLUGIN_LAYER, "error": p.reason} for p in broken]
    if output_format == "json":
        if by_layer:
            payload: Any = [{"layer": layer, "about": about, "rules": members}
                            for layer, about, members in _layers(entries + failed)]
        else:
            payload = entries + [{"id": p.id, "error": p.reason} for p in broken]
        click.echo(json.dumps(payload, indent=2))
        return
    from tabulate import tabulate

    def table(members: list[Entry]) -> str:
        rows = [[e["id"], "error", f"(broken plugin) {e['error']}"] if "error" in e
                else [e["id"], e["severity"], e["title"]] for e in members]
        return str(tabulate(rows, headers=["ID", "SEVERITY", "TITLE"], tablefmt="simple"))

    if not by_layer:
        click.echo(table(entries + failed))
        return
    groups = _layers(entries + failed)
    click.echo("\n\n".join(f"{layer}: {about}\n{table(members)}" for layer, about, members in groups))


def _block(title: str, text: str, width: int = 88) -> str:
    return f"{title}\n" + textwrap.fill(text, width=width, initial_indent="  ", subsequent_indent="  ")


@click.command()
@click.argument("rule_id", metavar="ID", type=RULE_ID)
def explain(rule_id: str) -> None:
    """Show one rule's rationale, remediation and examples (from its case file)."""
    from auditor.cases import explain_examples
    from auditor.errors import AuditError
    from auditor.registry import load_rules

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
