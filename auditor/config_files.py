"""Loading the auditor's own YAML config files (exception list, posture).

Each is validated against a JSON Schema shipped in `auditor/data/`; an error
names the file, the line, the entry and the field, in one line.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from auditor.errors import ConfigError
from auditor.sources.yaml_docs import LocatedConfig, YAMLInputError, load_config_document

MAX_CONFIG_BYTES = 4 * 1024 * 1024


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads(resources.files("auditor.data").joinpath(name).read_text(encoding="utf-8"))


def read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read {what}: {error.strerror or error}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {what} larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: {what} is not valid UTF-8 (offset {error.start})") from None


def _describe_path(data: Any, path: tuple) -> str:
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
    message = error.message
    return message if len(message) <= 300 else message[:297] + "..."


def load_validated(path: str, schema_name: str, what: str, text: str | None = None) -> LocatedConfig:
    if text is None:
        text = read_text(path, what)
    try:
        config = load_config_document(text)
    except YAMLInputError as error:
        where = f"{path}:{error.line}" if error.line else path
        raise ConfigError(f"{where}: {what}: {error.problem}") from None
    import jsonschema  # imported here: only runs that load a config file pay for it

    validator = jsonschema.Draft202012Validator(load_schema(schema_name), format_checker=jsonschema.FormatChecker())
    errors = list(validator.iter_errors(config.data))
    if errors:
        def position(error: Any) -> tuple:
            return (config.line_of(tuple(error.absolute_path)) or 0, tuple(str(p) for p in error.absolute_path))

        first = min(errors, key=position)
        line = config.line_of(tuple(first.absolute_path))
        where = f"{path}:{line}" if line else path
        field = _describe_path(config.data, tuple(first.absolute_path))
        raise ConfigError(f"{where}: {what}: {field}: {_error_message(first)}")
    return config
