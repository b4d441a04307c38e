"""SchedulerClient against a real server: the protocol's calls, and refusals as typed exceptions."""

from __future__ import annotations

import socket

import pytest
from chronicle_server import Team, wait_for

from chronicle_worker import (
    STALE_LEASE_PROBLEM,
    Completed,
    Extended,
    LeasedRun,
    SchedulerApiError,
    SchedulerClient,
    StaleLeaseError,
    TransportError,
    is_transient,
)

NO_RETRIES = {"maxAttempts": 1, "baseSeconds": 0, "maxSeconds": 0}


def lease_one(client: SchedulerClient, team: Team, lease_seconds: int = 30) -> LeasedRun:
    leases = client.lease({"queues": [team.queue], "max": 1, "leaseSeconds": lease_seconds, "waitSeconds": 5})
    assert len(leases) == 1
    return leases[0]


def test_a_stale_fencing_token_raises_stale_lease_error_and_changes_nothing(team: Team) -> None:
    job = team.define_job("fenced", retry={"maxAttempts": 3, "baseSeconds": 0, "maxSeconds": 0})
    run_id = team.enqueue(job, {"n": 1})
    client = SchedulerClient(team.url, team.worker_token)
    first = lease_one(client, team, lease_seconds=1)

    # The lease lapses; the scheduler hands the run on, to a worker with a newer token.
    wait_for(lambda: team.state(run_id) in ("ready", "retry_wait"), "the lease expired", timeout=10)
    second = lease_one(client, team)
    assert second.run_id == run_id and second.fencing_token > first.fencing_token

    with pytest.raises(StaleLeaseError) as refused:
        client.complete(run_id, {"fencingToken": first.fencing_token, "outcome": "success"})
    assert refused.value.status == 409
    assert refused.value.problem_type == STALE_LEASE_PROBLEM
    assert not is_transient(refused.value)
    with pytest.raises(StaleLeaseError):
        client.heartbeat(run_id, first.fencing_token, 30)
    # In a batch, the stale run is refused alone, as a StaleLeaseError among the results.
    [outcome] = client.heartbeat_many([{"runId": run_id, "fencingToken": first.fencing_token}])
    assert isinstance(outcome, StaleLeaseError)
    stale = client.complete_many([{"runId": run_id, "fencingToken": first.fencing_token, "outcome": "success"}])
    assert isinstance(stale.results[0], StaleLeaseError)
    assert team.state(run_id) == "leased"

    # The current holder's token still works.
    extended = client.heartbeat(run_id, second.fencing_token, 30)
    assert isinstance(extended, Extended) and extended.lease_expires_at is not None
    done = client.complete(run_id, {"fencingToken": second.fencing_token, "outcome": "success"})
    assert done == Completed(run_id=run_id, state="succeeded")


def test_complete_many_completes_and_leases_the_next_runs_in_one_call(team: Team) -> None:
    job = team.define_job("batched", retry=NO_RETRIES)
    run_ids = [team.enqueue(job, {"n": n}) for n in range(3)]
    client = SchedulerClient(team.url, team.worker_token)
    first = lease_one(client, team)

    answer = client.complete_many(
        [{"runId": first.run_id, "fencingToken": first.fencing_token, "outcome": "failure", "error": "boom"}],
        {"queues": [team.queue], "max": 5, "leaseSeconds": 30, "workerId": "py-batch"},
    )
    assert answer.results == [Completed(run_id=first.run_id, state="dead")]
    assert sorted(run.run_id for run in answer.leases) == sorted(set(run_ids) - {first.run_id})
    assert team.run(first.run_id)["lastError"] == "boom"


def test_refusals_are_typed_problem_details(team: Team) -> None:
    with pytest.raises(SchedulerApiError) as unauthorized:
        SchedulerClient(team.url, "not-a-token").lease({"queues": [team.queue], "max": 1})
    assert (unauthorized.value.status, unauthorized.value.problem_type) == (401, "/problems/unauthorized")

    client = SchedulerClient(team.url, team.worker_token)
    with pytest.raises(SchedulerApiError) as invalid:
        client.lease({"queues": [team.queue], "max": 0})
    assert (invalid.value.status, invalid.value.problem_type) == (400, "/problems/validation-error")
    assert "max" in invalid.value.detail
    assert invalid.value.problem["instance"] == "/v1/lease"
    with pytest.raises(SchedulerApiError) as forbidden:
        client.lease({"queues": ["not-granted"], "max": 1})
    assert (forbidden.value.status, forbidden.value.problem_type) == (403, "/problems/forbidden")
    with pytest.raises(SchedulerApiError) as not_found:
        client.heartbeat("run_doesnotexist", 1)
    assert (not_found.value.status, not_found.value.problem_type) == (404, "/problems/not-found")
    assert not isinstance(not_found.value, StaleLeaseError)


def test_no_answer_is_a_transient_transport_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port now.
    with pytest.raises(TransportError) as refused:
        SchedulerClient(f"http://127.0.0.1:{port}", "token", timeout=2).lease({"queues": ["q"], "max": 1})
    assert is_transient(refused.value)
