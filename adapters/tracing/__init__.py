"""OpenTelemetry traces (the SDK, the OTLP exporter and the libraries' instrumentation)."""

from adapters.tracing.otel import Tracing, install_otlp

__all__ = ["Tracing", "install_otlp"]
