"""Entities and value objects of the core."""
