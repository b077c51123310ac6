"""A simulated cluster: virtual GPU nodes and a Kueue-like admission loop, behind ClusterGateway."""
