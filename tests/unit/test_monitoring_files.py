"""The alerting rules and the Grafana dashboard shipped in deploy/monitoring load and make sense.

Covers: the rules file has Prometheus' shape (groups of rules, each alert with an expression,
`for`, a severity and a summary) and every expression parses as PromQL (promql-parser, the
parser of the Rust Prometheus ecosystem, standing in for `promtool check rules`); the dashboard
is Grafana JSON whose every panel query parses; and every metric the rules and panels name is
one budcluster exports (a rule on a misspelt metric would never fire).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import promql_parser
import yaml
from prometheus_client.parser import text_string_to_metric_families

from adapters.metrics import PrometheusMetrics

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
SEVERITIES = {"info", "warning", "critical"}
DURATION = re.compile(r"^\d+[smhd]$")


def exported() -> set[str]:
    """Every sample name a scrape can hold (histograms' _bucket/_sum/_count included)."""
    body, _ = PrometheusMetrics().exposition()
    names: set[str] = set()
    for family in text_string_to_metric_families(body.decode()):
        names.add(family.name)
        kind = family.type
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_sum", "_count"),
        }.get(kind, ("",))
        names.update(family.name + s for s in suffixes)
    return names


def metrics_in(expression: str) -> set[str]:
    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            found.add(node.name)

    promql_parser.walk(promql_parser.parse(expression), pre_visit=visit)
    return found


def test_the_alert_rules_parse_and_name_exported_metrics() -> None:
    document = yaml.safe_load((MONITORING / "budcluster-alerts.yaml").read_text())
    known = exported()
    rules = [rule for group in document["groups"] for rule in group["rules"]]
    assert len(rules) >= 10
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert DURATION.match(rule["for"]), rule
        assert rule["labels"]["severity"] in SEVERITIES, rule
        assert rule["annotations"]["summary"], rule
        used = metrics_in(rule["expr"])
        assert used, rule["alert"]
        assert used <= known, (rule["alert"], used - known)


def test_a_broken_expression_is_refused() -> None:
    try:
        promql_parser.parse("sum(rate(job_retries_total[5m]) by")
    except ValueError:
        return
    raise AssertionError("promql-parser accepted a broken expression")


def test_the_dashboard_queries_parse_and_name_exported_metrics() -> None:
    dashboard = json.loads((MONITORING / "budcluster-dashboard.json").read_text())
    assert dashboard["uid"] and dashboard["title"]
    known = exported()
    panels = dashboard["panels"]
    assert len(panels) >= 10
    covered: set[str] = set()
    for panel in panels:
        assert {"id", "type", "title", "gridPos", "targets"} <= set(panel), panel
        for target in panel["targets"]:
            used = metrics_in(target["expr"])
            assert used <= known, (panel["title"], used - known)
            covered |= used
    for family in (
        "job_state_transitions_total",
        "job_queue_wait_seconds_bucket",
        "schedule_start_estimate_error_seconds_bucket",
        "schedule_start_window_total",
        "schedule_reestimate_seconds_bucket",
        "cluster_gpus",
    ):
        assert family in covered, family
