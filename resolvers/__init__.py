"""Thin resolvers: check the caller, call one domain service, convert the result."""
