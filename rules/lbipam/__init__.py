"""LoadBalancer IPs: LB-IPAM pools, their ranges and the addresses Services get."""
