"""The outbound policy: a caller's URL resolved here and judged by domain.model.outbound."""

from adapters.outbound.policy import ResolvingOutboundPolicy

__all__ = ["ResolvingOutboundPolicy"]
