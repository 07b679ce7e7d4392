"""The HTTP(S) edge: Gateway API CRDs, the Cilium GatewayClass, listeners and their TLS."""
