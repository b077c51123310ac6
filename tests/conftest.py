"""Shared pytest setup: every test runs in one event loop (session-scoped fixtures share it)."""
