"""The composition root: settings, wiring of adapters into ports, the ASGI app, and the CLI."""
