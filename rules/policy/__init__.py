"""Network policy: default-deny per application namespace, allow-all policies, the host firewall."""
