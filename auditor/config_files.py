"""Loading the auditor's own YAML config files (exception list, posture, rule case files).

Each is validated against a JSON Schema shipped in `auditor/data/`; an error
names the file, the line, the entry and the field, in one line. References
from one file to the rules (an exception's `rules`, posture `severity:` keys)
are checked against the rules of the run, with a "did you mean" for typos.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection
from functools import cache
from typing import Any

from auditor.errors import AuditError, ConfigError
from auditor.parsing.yaml_docs import LocatedConfig, YAMLInputError, load_config_document

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# The package's data files (auditor/data/), read as files: every reader of them opens a path. Not
# through importlib.resources, whose import (tempfile, shutil, ...) was ~4 ms of each run's start-up.
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def data_path(name: str) -> str:
    """The path of `name` among the auditor's shipped data files (auditor/data/)."""
    return os.path.join(DATA_DIR, name)


@cache
def load_schema(name: str) -> dict[str, Any]:
    with open(data_path(name), encoding="utf-8") as file:
        schema: dict[str, Any] = json.load(file)
    return schema


def unknown_rule(rule_id: str, known: Collection[str]) -> str:
    """`unknown rule 'x'`, with the closest known id when one is close (yamllint-style)."""
    import difflib  # only for a typo in a config file

    close = difflib.get_close_matches(rule_id, sorted(known), n=1, cutoff=0.6)
    return f"unknown rule {rule_id!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _bundled(path: str) -> bool:
    """Whether `path` is a file shipped in auditor/data/ (checked against its schema by the test suite)."""
    shipped = data_path(os.path.basename(path))
    return os.path.isfile(shipped) and os.path.realpath(shipped) == os.path.realpath(path)


def read_small_file(path: str, what: str, limit: int = MAX_CONFIG_BYTES,
                    error: type[AuditError] = ConfigError) -> str:
    """The UTF-8 text of a small file the auditor reads whole (config, values, reports).

    Bounded (`limit` bytes), refusing folders and binary files, and failing
    with one line naming the file (and line, for undecodable bytes) as
    `error`, an exit-2 error.
    """
    try:
        with open(path, "rb") as stream:
            if stat.S_ISDIR(os.fstat(stream.fileno()).st_mode):
                raise error(f"{path}: {what} is a folder")
            data = stream.read(limit + 1)
    except OSError as failure:
        raise error(f"{path}: cannot read {what}: {failure.strerror or failure}") from None
    if len(data) > limit:
        raise error(f"{path}: {what} larger than {limit:,} bytes")
    if b"\x00" in data:
        raise error(f"{path}: {what} is binary (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as failure:
        line = data.count(b"\n", 0, failure.start) + 1
        raise error(f"{path}:{line}: {what} is not valid UTF-8 (offset {failure.start})") from None


def _describe_path(data: Any, path: tuple[str | int, ...]) -> str:
    """`exceptions[1] (dashboard).match.kind` for a path into `data`."""
    text = ""
    node = data
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                text += f" ({node['name']})"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "(top level)"


def _error_message(error: Any) -> str:
    # jsonschema's messages quote the whole instance for `additionalProperties`
    # and `required`; they are already one line and name the field.
    message = str(error.message)
    return message if len(message) <= 300 else message[:297] + "..."


def load_validated(path: str, schema_name: str, what: str, text: str | None = None) -> LocatedConfig:
    """The config file at `path`, parsed and valid against `schema_name`, or a one-line ConfigError.

    The files shipped in auditor/data/ (the bundled exception list) are not
    validated at run time: the test suite validates them, and a run that
    reads no file of the user's then never imports jsonschema (~45 ms).
    """
    if text is None:
        text = read_small_file(path, what)
    try:
        config = load_config_document(text)
    except YAMLInputError as error:
        where = f"{path}:{error.line}" if error.line else path
        raise ConfigError(f"{where}: {what}: {error.problem}") from None
    if _bundled(path):
        return config
    check_schema(config, path, schema_name, what)
    return config


def check_schema(config: LocatedConfig, path: str, schema_name: str, what: str, prefix: str = "") -> None:
    """Refuse `config` (read from `path`) unless it is valid against `schema_name`: one line naming the
    file, the line and the field (`prefix` before the field: the key of a section validated on its own)."""
    import jsonschema  # imported here: only runs that validate a config file pay for it

    validator = jsonschema.Draft202012Validator(load_schema(schema_name), format_checker=jsonschema.FormatChecker())
    errors = list(validator.iter_errors(config.data))
    if errors:
        def position(error: Any) -> tuple[int, tuple[str, ...]]:
            return (config.line_of(tuple(error.absolute_path)) or 0, tuple(str(p) for p in error.absolute_path))

        first = min(errors, key=position)
        line = config.line_of(tuple(first.absolute_path))
        where = f"{path}:{line}" if line else path
        field = _describe_path(config.data, tuple(first.absolute_path))
        field = f"{prefix}.{field}" if prefix and field != "(top level)" else prefix or field
        raise ConfigError(f"{where}: {what}: {field}: {_error_message(first)}")
