"""Kueue's Kubernetes objects, rendered from the quota model (pure: no I/O, no client)."""
