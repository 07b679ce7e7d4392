"""Drift and compliance auditor for Kubernetes clusters whose exposure is all-Cilium.

Importing this package must stay cheap: `audit --version` and `audit rules`
start fast because nothing heavy (YAML, JSON Schema, the kubernetes client) is
imported here.
"""

__version__ = "0.1.0"
TOOL_NAME = "cilium-exposure-auditor"
