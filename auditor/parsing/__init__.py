"""Safe decoding of the YAML and JSON the auditor reads, with line numbers and limits.

A neutral layer: the offline sources, the config-file loaders and the Cilium
Helm values all parse through it, and it imports nothing above the object model.
"""
