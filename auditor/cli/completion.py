"""Shell completion: paths where a path goes, rule ids, format names and kubeconfig contexts.

Completion runs through click's protocol (the `_AUDIT_COMPLETE` variable, see
docs/terminal.md): the shell starts `audit` with the words typed so far and
reads back typed items — `plain` values to offer, or `file`/`dir` to let the
shell complete paths itself. This module supplies the values click cannot
know: rule ids (from rules/index.json and the plugins' entry-point names,
without importing any rule) and kubeconfig contexts (read from the
kubeconfig with the auditor's bounded YAML reader, without the kubernetes
client). Anything that goes wrong while completing offers nothing: a
completion never prints an error.

It also replaces click's bash script by one that keeps filename completion
beside the offered values: click's own empties the offered values when it is
told "file", so `audit <TAB>` could complete either commands or paths, never
both.

Imported at start-up (the bash script must be registered before click reads
the completion request): click only, everything else when asked.
"""

from __future__ import annotations

import os

import click
from click.shell_completion import BashComplete, CompletionItem, add_completion_class

# Kubeconfigs are small; a huge or node-dense file is not one (and completion must stay instant).
MAX_KUBECONFIG_NODES = 200_000


def rule_ids() -> list[tuple[str, str]]:
    """(id, title) of every built-in rule and the id of every installed plugin, sorted."""
    from importlib.metadata import entry_points

    from auditor.registry import ENTRY_POINT_GROUP, builtin_index

    entries = {entry["id"]: str(entry.get("title", "")) for entry in builtin_index()}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        entries.setdefault(entry_point.name, "(plugin)")
    return sorted(entries.items())


class RuleIdType(click.types.StringParamType):
    """A rule id: a plain string (converted as click's), completed from the rules the auditor knows."""

    name = "rule id"

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            known = rule_ids()
        except Exception:  # a broken installation completes nothing rather than printing a traceback
            return []
        return [CompletionItem(rule_id, help=title or None) for rule_id, title in known
                if rule_id.startswith(incomplete)]


def kubeconfig_paths(explicit: str | None) -> list[str]:
    """The kubeconfig files kubectl would read: --kubeconfig, else $KUBECONFIG's list, else ~/.kube/config."""
    if explicit:
        return [explicit]
    listed = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    return listed or [os.path.join(os.path.expanduser("~"), ".kube", "config")]


def kubeconfig_contexts(explicit: str | None = None) -> list[str]:
    """The context names of the kubeconfig files, in file order, each once; unreadable files give none."""
    from auditor.config_files import read_small_file
    from auditor.errors import AuditError
    from auditor.parsing.yaml_docs import YAMLInputError, iter_documents

    names: list[str] = []
    for path in kubeconfig_paths(explicit):
        try:
            documents = list(iter_documents(read_small_file(path, "kubeconfig"), max_nodes=MAX_KUBECONFIG_NODES))
        except (AuditError, YAMLInputError):
            continue
        data = documents[0].data if documents else None
        contexts = data.get("contexts") if isinstance(data, dict) else None
        for context in contexts if isinstance(contexts, list) else []:
            name = context.get("name") if isinstance(context, dict) else None
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


class KubeContextType(click.types.StringParamType):
    """A kubeconfig context name: a plain string (converted as click's), completed from the kubeconfig in use."""

    name = "context"

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        explicit = ctx.params.get("kubeconfig")
        try:
            contexts = kubeconfig_contexts(explicit if isinstance(explicit, str) else None)
        except Exception:  # completion never prints a traceback
            return []
        return [CompletionItem(name) for name in contexts if name.startswith(incomplete)]


class InputPathType(click.types.StringParamType):
    """A path to audit (or `-`): a plain string, left for the auditor to open and judge, completed as a path.

    Not `click.Path`: that checks readability itself, and an unreadable file
    must get the auditor's own one-line error (file and reason), not a usage error.
    """

    name = "path"

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        return [CompletionItem(incomplete, type="file")]


RULE_ID = RuleIdType()
KUBE_CONTEXT = KubeContextType()
INPUT_PATH = InputPathType()


def complete_known_options(command: click.Command) -> click.Command:
    """Give the plain-string `--rule`, `--skip-rule` and `--context` options of `command` their completing type.

    For commands whose options are declared elsewhere (auditor/cli/live.py);
    the types convert exactly as click's string type does.
    """
    for param in command.params:
        if not isinstance(param, click.Option) or type(param.type) is not click.types.StringParamType:
            continue
        if {"--rule", "--skip-rule"} & set(param.opts):
            param.type = RULE_ID
        elif "--context" in param.opts:
            param.type = KUBE_CONTEXT
    return command


# click's bash script with one change: `file` and `dir` items add the shell's
# own path completions to the offered values (compgen), instead of discarding
# those values and falling back to readline's default.
_SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \
%(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            compopt -o filenames
            COMPREPLY+=($(compgen -d -- "$value"))
        elif [[ $type == 'file' ]]; then
            compopt -o filenames
            COMPREPLY+=($(compgen -f -- "$value"))
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=($value)
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""


class PathKeepingBashComplete(BashComplete):
    """Bash completion that offers paths beside values (commands and paths both after `audit`)."""

    source_template = _SOURCE_BASH


add_completion_class(PathKeepingBashComplete, "bash")


def with_paths(items: list[CompletionItem], incomplete: str) -> list[CompletionItem]:
    """`items` plus the shell's completion of paths, unless an option is being typed."""
    if incomplete.startswith("-"):
        return items
    return [CompletionItem(incomplete, type="file"), *items]
