"""Reporters: each turns an `AuditResult` into text; none looks at raw objects.

Formats are listed here explicitly and imported only when used.
"""

from __future__ import annotations

import importlib
from typing import Callable

# format name -> "module:function(result) -> str"
FORMATS: dict[str, str] = {
    "text": "auditor.report.text:render",
    "json": "auditor.report.json_report:render",
    "junit": "auditor.report.junit:render",
    "sarif": "auditor.report.sarif:render",
    "markdown": "auditor.report.markdown:render",
    "prometheus": "auditor.report.prometheus:render",
}


def renderer(name: str) -> Callable:
    module_name, _, function = FORMATS[name].partition(":")
    return getattr(importlib.import_module(module_name), function)
