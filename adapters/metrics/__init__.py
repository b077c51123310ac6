"""Prometheus metrics: job lifecycle, schedule, clusters and GraphQL (prometheus-client)."""

from adapters.metrics.prometheus import ClusterGauges, PrometheusMetrics, reason_category

__all__ = ["ClusterGauges", "PrometheusMetrics", "reason_category"]
