"""Hashing of API token secrets."""
