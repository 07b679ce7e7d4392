"""mypy over `auditor/` and `rules/`, with `rules/` checked under the name it is installed as.

    python -m tests.typecheck        # what tests/test_code_quality.py runs

The rule plugins live in the `rules/` folder but install as `auditor_rules`
through `[tool.setuptools] package-dir`. An editable install maps that name
with an import hook, which Python follows but static checkers do not (mypy
cannot follow import hooks: https://github.com/python/mypy/issues/13392,
https://github.com/pypa/setuptools/issues/3518), so `mypy rules` would check a
package named `rules` whose `auditor_rules.*` imports resolve to nothing.

Instead of a second copy of the mapping, this reads `package-dir` from
pyproject.toml and hands mypy every file with its installed module name
(mypy's BuildSource), then prints mypy's report. The configuration
(`--strict`, the overrides) is `[tool.mypy]` in pyproject.toml, as for a plain
`mypy` run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from mypy import build
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parents[1]
# The installed packages checked, by the name they import as.
CHECKED = ("auditor", "auditor_rules")


def package_dirs() -> dict[str, Path]:
    """`[tool.setuptools] package-dir`: installed package name -> source folder."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def sources() -> list[BuildSource]:
    found = []
    for package, folder in sorted(package_dirs().items()):
        if package not in CHECKED:
            continue
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append(BuildSource(str(path.relative_to(ROOT)), ".".join([package, *parts])))
    return found


def main() -> int:
    os.chdir(ROOT)  # mypy resolves the config and the source paths from here
    # The options as a `mypy` run reads them (the file named only satisfies the parser: the
    # sources checked are the ones built below).
    _, options = process_options(["--config-file", "pyproject.toml", "--no-error-summary", "auditor/__init__.py"])
    try:
        result = build.build(sources(), options)
        messages = result.errors
    except build.CompileError as error:
        messages = error.messages
    for line in messages:
        print(line)
    errors = [line for line in messages if ": error:" in line]
    print(f"mypy: {len(errors)} error(s) in {len(sources())} modules")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
