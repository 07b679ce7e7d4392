"""Reporters: each turns an `AuditResult` into text; none looks at raw objects.

Formats are listed here explicitly and imported only when used. `render`
gives each format the presentation options it understands: the text report
its width, colour and verbosity; Markdown, SARIF and HTML whether to list what
only `-v` shows (unused entries of the built-in exception list); the others none.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# format name -> "module:function(result) -> str"
FORMATS: dict[str, str] = {
    "text": "auditor.report.text:render",
    "json": "auditor.report.json_report:render",
    "junit": "auditor.report.junit:render",
    "sarif": "auditor.report.sarif:render",
    "markdown": "auditor.report.markdown:render",
    "prometheus": "auditor.report.prometheus:render",
    "codequality": "auditor.report.codequality:render",
    "html": "auditor.report.html:render",
}
DEFAULT_WIDTH = 80  # columns, when the terminal's width is unknown (a pipe, a file, CI logs)


class Verbosity(enum.IntEnum):
    """How much the human-facing reports say: `-q` failures and the verdict, `-v` everything."""

    QUIET = -1
    NORMAL = 0
    VERBOSE = 1


@dataclass(frozen=True)
class Presentation:
    """How a report is presented, as the command line asks for it."""

    width: int = DEFAULT_WIDTH
    color: bool = False
    verbosity: Verbosity = Verbosity.NORMAL


def renderer(name: str) -> Callable[..., Any]:
    module_name, _, function = FORMATS[name].partition(":")
    render_function: Callable[..., Any] = getattr(importlib.import_module(module_name), function)
    return render_function


def render(name: str, result: Any, presentation: Presentation = Presentation()) -> str:
    """The report `name` of `result`, with the presentation options that format takes."""
    function = renderer(name)
    if name == "text":
        text: str = function(result, color=presentation.color, width=presentation.width,
                             verbosity=presentation.verbosity)
    elif name in ("markdown", "sarif", "html"):
        text = function(result, verbose=presentation.verbosity is Verbosity.VERBOSE)
    else:
        text = function(result)
    return text
