"""The eBPF datapath: kube-proxy replacement, agent settings and versions, encryption."""
