"""Use cases of the core: each a short method running in one unit of work."""
