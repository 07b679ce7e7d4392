"""Reporters: each turns an `AuditResult` into text; none looks at raw objects.

Formats are listed here explicitly and imported only when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# format name -> "module:function(result) -> str"
FORMATS: dict[str, str] = {
    "text": "auditor.report.text:render",
    "json": "auditor.report.json_report:render",
    "junit": "auditor.report.junit:render",
    "sarif": "auditor.report.sarif:render",
    "markdown": "auditor.report.markdown:render",
    "prometheus": "auditor.report.prometheus:render",
}


def renderer(name: str) -> Callable[..., Any]:
    module_name, _, function = FORMATS[name].partition(":")
    render: Callable[..., Any] = getattr(importlib.import_module(module_name), function)
    return render
