"""Ways in besides the edge: LoadBalancer and NodePort Services, external IPs, UIs exposed."""
