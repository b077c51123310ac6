"""Load generation against OpenAI-compatible model endpoints (streaming, over aiohttp)."""

from adapters.loadgen.client import StreamingLoadGenerator

__all__ = ["StreamingLoadGenerator"]
