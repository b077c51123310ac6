"""Where spans go, from the environment (OpenTelemetry's variables, and budcluster's own)."""

from __future__ import annotations

import pytest

from budcluster.settings import otlp_traces_url


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}, "http://otel:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel:4318/"}, "https://otel:4318/v1/traces"),
        ({"BUDCLUSTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/custom",
            },
            "http://traces:4318/custom",
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "OTEL_SDK_DISABLED": "true"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "OTEL_TRACES_EXPORTER": "none"}, None),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://o:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": ""},
            "http://o:4318/v1/traces",
        ),
    ],
)
def test_the_traces_url(env: dict[str, str], url: str | None) -> None:
    assert otlp_traces_url(env) == url


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://o:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "user:pw@otel:4318"}, "http:// or https://"),
    ],
)
def test_what_cannot_be_used_is_refused_by_name(env: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named) as refused:
        otlp_traces_url(env)
    assert "pw" not in str(refused.value)
