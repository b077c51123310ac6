"""Serving benchmarks: what a load run's samples mean as reported figures."""
