"""Adapters: one sub-package per outside thing, each implementing ports of `domain.ports`."""
