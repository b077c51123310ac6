"""Test support: fakes of the ports, fixtures' helpers, and the service probe used by ./dev."""
