"""Delivery of committed events to subscribers: an in-process hub, fed locally or through Redis."""
