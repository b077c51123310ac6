"""vLLM's /metrics read as a replica's load, and the mean queue time between two reads.

Covers: the running and waiting gauges summed over label sets (engines) into requests in
flight; the queue-time histogram's _sum and _count (with or without its TYPE line), none when
it is missing; text that is not Prometheus text, or lacks vLLM's gauges, or has a count that is
not a finite number at least 0, refused; the mean wait over the requests counted between two
reads, over the replicas read both times, none when no request was counted, and a replica
whose totals fell (a restarted process) left out.
"""

from __future__ import annotations

import pytest

from adapters.kubernetes.vllm_metrics import QueueTotals, ReplicaLoad, mean_wait, parse

VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama-3-8b"} 3.0
vllm:num_requests_running{engine="1",model_name="llama-3-8b"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama-3-8b"} 2.0
vllm:num_requests_waiting{engine="1",model_name="llama-3-8b"} 0.0
# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="llama-3-8b"} 4.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="llama-3-8b"} 10.0
vllm:request_queue_time_seconds_count{engine="0",model_name="llama-3-8b"} 10.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="llama-3-8b"} 12.5
vllm:request_queue_time_seconds_count{engine="1",model_name="llama-3-8b"} 2.0
vllm:request_queue_time_seconds_sum{engine="1",model_name="llama-3-8b"} 0.5
# HELP vllm:request_queue_time_seconds_created Histogram of time spent in WAITING phase.
# TYPE vllm:request_queue_time_seconds_created gauge
vllm:request_queue_time_seconds_created{engine="0",model_name="llama-3-8b"} 1.7e+09
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="llama-3-8b"} 99.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="llama-3-8b"} 10.0
"""


def test_in_flight_is_running_and_waiting_over_every_engine() -> None:
    assert parse(VLLM) == ReplicaLoad(in_flight=6, queue=QueueTotals(13.0, 12.0))


def test_untyped_samples_read_the_same() -> None:
    untyped = "\n".join(line for line in VLLM.splitlines() if not line.startswith("#"))
    assert parse(untyped + "\n") == ReplicaLoad(in_flight=6, queue=QueueTotals(13.0, 12.0))


def test_no_queue_histogram_is_no_queue_totals() -> None:
    text = (
        'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_waiting{model_name="m"} 0\n'
    )
    assert parse(text) == ReplicaLoad(in_flight=1, queue=None)


@pytest.mark.parametrize(
    "text",
    [
        "<html><body>502 Bad Gateway</body></html>",
        '{"kind": "Status", "code": 503}',
        "hello world",
        "",
        "# only comments\n",
        "vllm:num_requests_running 1\n",  # no waiting gauge
        "some_other_server_requests 4\n",
        "vllm:num_requests_running NaN\nvllm:num_requests_waiting 0\n",
        "vllm:num_requests_running -1\nvllm:num_requests_waiting 0\n",
        "vllm:num_requests_running +Inf\nvllm:num_requests_waiting 0\n",
        'vllm:num_requests_running{model_name="unterminated} 1\n',
        "\x00\x01\x02",
    ],
)
def test_what_is_not_vllms_metrics_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse(text)


def test_the_mean_wait_of_the_requests_counted_between_two_reads() -> None:
    a0, a1 = QueueTotals(10.0, 5.0), QueueTotals(16.0, 8.0)  # 3 requests, 6 s
    b0, b1 = QueueTotals(1.0, 1.0), QueueTotals(3.0, 2.0)  # 1 request, 2 s
    assert mean_wait([(a0, a1), (b0, b1)]) == pytest.approx(2.0)
    assert mean_wait([(None, a1), (b0, b1)]) == pytest.approx(2.0)  # a first read of one


def test_no_request_counted_is_no_mean() -> None:
    same = QueueTotals(10.0, 5.0)
    assert mean_wait([(same, same)]) is None
    assert mean_wait([(None, same)]) is None
    assert mean_wait([(same, None)]) is None
    assert mean_wait([]) is None


def test_a_restarted_replica_is_left_out() -> None:
    before, restarted = QueueTotals(10.0, 5.0), QueueTotals(1.0, 1.0)
    steady0, steady1 = QueueTotals(0.0, 0.0), QueueTotals(4.0, 4.0)
    assert mean_wait([(before, restarted)]) is None
    assert mean_wait([(before, restarted), (steady0, steady1)]) == pytest.approx(1.0)
