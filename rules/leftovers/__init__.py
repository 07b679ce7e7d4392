"""What another network stack left behind: MetalLB, ingress-nginx, kube-proxy, the AWS VPC CNI."""
