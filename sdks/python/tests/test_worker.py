"""The thread-based Worker against a real server: runs enqueued over REST end as the handler says."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chronicle_server import Team, wait_for

from chronicle_worker import LeasedRun, NonRetryableError, RetryLater, RunContext, SchedulerClient, Worker

NO_RETRIES = {"maxAttempts": 1, "baseSeconds": 0, "maxSeconds": 0}


@contextmanager
def running(worker: Worker) -> Iterator[threading.Thread]:
    """The worker's run() in a thread; stopped, and waited for, at the end."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        worker.stop(grace_seconds=5)
        thread.join(timeout=15)
    assert not thread.is_alive(), "run() did not return after stop()"
    assert errors == []


def client(team: Team) -> SchedulerClient:
    return SchedulerClient(team.url, team.worker_token)


def test_a_run_enqueued_over_rest_is_handled_with_its_payload_and_keys_and_succeeds(team: Team) -> None:
    job = team.define_job("greet", retry=NO_RETRIES)
    payloads = [{"greet": f"hello {n}"} for n in range(3)]
    run_ids = [team.enqueue(job, payload) for payload in payloads]
    seen: dict[str, dict[str, Any]] = {}

    def handler(run: LeasedRun, context: RunContext) -> None:
        seen[run.run_id] = {
            "payload": run.payload,
            "job": run.job,
            "idempotencyKey": context.idempotency_key,
            "fencingToken": context.fencing_token,
            "attempt": context.attempt,
        }

    with running(Worker(client(team), [team.queue], handler, concurrency=2, wait_seconds=1, worker_id="py-test")):
        wait_for(lambda: all(team.state(run_id) == "succeeded" for run_id in run_ids), "every run succeeded")

    assert sorted(seen) == sorted(run_ids)
    for run_id, payload in zip(run_ids, payloads):
        run = team.run(run_id)
        assert seen[run_id]["payload"] == payload
        assert seen[run_id]["job"] == job
        assert seen[run_id]["attempt"] == 1
        assert seen[run_id]["idempotencyKey"] == run["idempotencyKey"]
        assert isinstance(seen[run_id]["fencingToken"], int)
        assert team.event_types(run_id) == ["RunScheduled", "RunLeased", "RunSucceeded"]
    # The fencing token is the revision of the run's RunLeased event (docs/api.md, "The worker protocol").
    events = team.api.expect("GET", f"/v1/runs/{run_ids[0]}/events")["events"]
    leased = next(event for event in events if event["type"] == "RunLeased")
    assert seen[run_ids[0]]["fencingToken"] == leased["revision"]
    assert leased["data"]["workerId"] == "py-test"


def test_the_handler_gets_the_trace_context_of_the_request_that_enqueued_the_run(team: Team) -> None:
    job = team.define_job("traced", retry=NO_RETRIES)
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    traced = team.enqueue(job, headers={"traceparent": traceparent, "tracestate": "vendor=blue"})
    untraced = team.enqueue(job)
    seen: dict[str, tuple[str | None, str | None]] = {}

    def handler(run: LeasedRun, context: RunContext) -> None:
        seen[run.run_id] = (run.traceparent, run.tracestate)

    with running(Worker(client(team), [team.queue], handler, wait_seconds=1)):
        wait_for(lambda: team.state(traced) == team.state(untraced) == "succeeded", "both runs succeeded")

    assert seen == {traced: (traceparent, "vendor=blue"), untraced: (None, None)}


def test_a_handler_that_raises_fails_the_run_as_the_jobs_retry_policy_says(team: Team) -> None:
    retried = team.define_job("flaky", retry={"maxAttempts": 2, "baseSeconds": 0, "maxSeconds": 0})
    fatal = team.define_job("fatal", retry={"maxAttempts": 3, "baseSeconds": 0, "maxSeconds": 0})
    retried_id, fatal_id = team.enqueue(retried, {"n": 1}), team.enqueue(fatal, {"n": 2})
    attempts: dict[str, list[tuple[int, str, int]]] = {retried_id: [], fatal_id: []}

    def handler(run: LeasedRun, context: RunContext) -> None:
        attempts[run.run_id].append((context.attempt, context.idempotency_key, context.fencing_token))
        if run.job == fatal:
            raise NonRetryableError("the payload can never work")
        raise ValueError(f"attempt {context.attempt} failed")

    with running(Worker(client(team), [team.queue], handler, wait_seconds=1)):
        wait_for(lambda: team.state(retried_id) == "dead" and team.state(fatal_id) == "dead", "both runs dead")

    # Retried once (two attempts in all), with the same idempotency key and a newer fencing token.
    assert [attempt for attempt, _, _ in attempts[retried_id]] == [1, 2]
    (_, key_1, token_1), (_, key_2, token_2) = attempts[retried_id]
    assert key_1 == key_2 and token_2 > token_1
    assert team.run(retried_id)["lastError"] == "attempt 2 failed"
    assert team.event_types(retried_id).count("RunFailed") == 2
    # NonRetryableError: straight to the dead-letter queue although attempts were left.
    assert [attempt for attempt, _, _ in attempts[fatal_id]] == [1]
    assert team.run(fatal_id)["lastError"] == "the payload can never work"


def test_a_handler_that_says_when_to_retry_has_its_run_wait_that_long_instead_of_the_backoff(team: Team) -> None:
    job = team.define_job("throttled", retry={"maxAttempts": 3, "baseSeconds": 0, "maxSeconds": 0})
    run_id = team.enqueue(job)

    def handler(run: LeasedRun, context: RunContext) -> None:
        raise RetryLater("the ERP answered 429", 29.5)

    with running(Worker(client(team), [team.queue], handler, wait_seconds=1)):
        wait_for(lambda: "RunFailed" in team.event_types(run_id), "the run failed")

    events = team.api.expect("GET", f"/v1/runs/{run_id}/events")["events"]
    failed = next(event["data"] for event in events if event["type"] == "RunFailed")
    waited = datetime.fromisoformat(failed["retryAt"]) - datetime.fromisoformat(failed["failedAt"])
    assert waited == timedelta(seconds=30)
    assert team.state(run_id) == "retry_wait"


def test_heartbeats_keep_a_run_leased_past_its_lease(team: Team) -> None:
    job = team.define_job("slow", retry=NO_RETRIES, timeoutSeconds=60)
    run_id = team.enqueue(job)
    lease_seconds = 2
    handled: list[float] = []

    def handler(run: LeasedRun, context: RunContext) -> None:
        started = time.monotonic()
        # Twice the lease: without heartbeats the lease would expire and the run go to another worker.
        assert not context.cancelled.wait(2.5 * lease_seconds)
        handled.append(time.monotonic() - started)

    worker = Worker(client(team), [team.queue], handler, lease_seconds=lease_seconds, wait_seconds=1)
    with running(worker):
        wait_for(lambda: team.state(run_id) == "succeeded", "the slow run succeeded", timeout=20)

    assert handled and handled[0] >= 2.5 * lease_seconds
    types = team.event_types(run_id)
    assert types.count("RunLeased") == 1
    assert "LeaseExpired" not in types
    assert types.count("LeaseExtended") >= 2
    assert types[-1] == "RunSucceeded"


def test_stop_lets_the_runs_in_flight_finish_and_leases_no_more(team: Team) -> None:
    job = team.define_job("drain", retry=NO_RETRIES)
    first = team.enqueue(job)
    started, release = threading.Event(), threading.Event()

    def handler(run: LeasedRun, context: RunContext) -> None:
        started.set()
        assert release.wait(10)

    worker = Worker(client(team), [team.queue], handler, wait_seconds=5)
    with running(worker) as thread:
        assert started.wait(10)
        worker.stop(grace_seconds=10)
        later = team.enqueue(job)
        # Stopping: run() waits for the run in flight, which is still leased (given half a second to return wrongly).
        thread.join(timeout=0.5)
        assert thread.is_alive()
        assert team.state(first) == "leased"
        release.set()
        thread.join(timeout=10)
        assert not thread.is_alive()

    assert team.state(first) == "succeeded"
    assert team.state(later) == "ready"


def test_a_handler_past_the_grace_period_is_given_up_uncompleted(team: Team) -> None:
    job = team.define_job("stuck", retry=NO_RETRIES)
    run_id = team.enqueue(job)
    started = threading.Event()
    reasons: list[BaseException | None] = []

    def handler(run: LeasedRun, context: RunContext) -> None:
        started.set()
        context.cancelled.wait(10)
        reasons.append(context.cancel_reason)

    worker = Worker(client(team), [team.queue], handler, wait_seconds=1)
    with running(worker) as thread:
        assert started.wait(10)
        stop_at = time.monotonic()
        worker.stop(grace_seconds=0.5)
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert time.monotonic() - stop_at < 5

    wait_for(lambda: len(reasons) == 1, "the handler was told")
    assert type(reasons[0]).__name__ == "GracePeriodOverError"
    # Not completed: the run stays leased until its lease expires.
    assert team.state(run_id) == "leased"
