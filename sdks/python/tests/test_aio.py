"""The asyncio variant against a real server: the same flow as the thread-based Worker."""

from __future__ import annotations

import asyncio
from typing import Any

from chronicle_server import Team

from chronicle_worker import AsyncRunContext, AsyncSchedulerClient, AsyncWorker, LeasedRun, NonRetryableError

NO_RETRIES = {"maxAttempts": 1, "baseSeconds": 0, "maxSeconds": 0}


async def until(condition: Any, what: str, timeout: float = 15.0) -> None:
    """Polls a blocking ``condition`` (REST calls) off the loop until it holds, within ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await asyncio.to_thread(condition):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


def test_the_async_worker_handles_runs_and_completes_them_as_the_handler_says(team: Team) -> None:
    job = team.define_job("async", retry=NO_RETRIES, timeoutSeconds=60)
    ok_ids = [team.enqueue(job, {"n": n}) for n in range(3)]
    bad_id = team.enqueue(job, {"fail": "bad payload"})
    slow_id = team.enqueue(job, {"sleep": 5})
    seen: dict[str, dict[str, Any]] = {}

    async def handler(run: LeasedRun, context: AsyncRunContext) -> None:
        seen[run.run_id] = {"payload": run.payload, "key": context.idempotency_key, "token": context.fencing_token}
        if "fail" in run.payload:
            raise NonRetryableError(run.payload["fail"])
        # Past the two-second lease: the automatic heartbeats keep it.
        await asyncio.sleep(run.payload.get("sleep", 0))

    async def scenario() -> None:
        client = AsyncSchedulerClient(team.url, team.worker_token)
        worker = AsyncWorker(client, [team.queue], handler, concurrency=4, lease_seconds=2, wait_seconds=5)
        running = asyncio.create_task(worker.run())
        await until(lambda: all(team.state(run_id) == "succeeded" for run_id in ok_ids), "the runs succeeded")
        await until(lambda: team.state(bad_id) == "dead", "the failing run is dead")
        # Stopping while the slow run is in flight: it finishes and completes first.
        worker.stop(grace_seconds=10)
        await asyncio.wait_for(running, 15)
        client.close()

    asyncio.run(scenario())

    assert team.state(slow_id) == "succeeded"
    assert "LeaseExtended" in team.event_types(slow_id)
    assert team.run(bad_id)["lastError"] == "bad payload"
    for run_id in ok_ids + [bad_id, slow_id]:
        assert seen[run_id]["key"] == team.run(run_id)["idempotencyKey"]
        assert isinstance(seen[run_id]["token"], int)
    assert [seen[run_id]["payload"] for run_id in ok_ids] == [{"n": n} for n in range(3)]


def test_stopping_cancels_the_long_poll_at_once(team: Team) -> None:
    async def handler(run: LeasedRun, context: AsyncRunContext) -> None:
        raise AssertionError("no run was enqueued")

    async def scenario() -> float:
        client = AsyncSchedulerClient(team.url, team.worker_token)
        worker = AsyncWorker(client, [team.queue], handler, wait_seconds=30)
        running = asyncio.create_task(worker.run())
        # White-box: the long poll is under way (nothing else tells).
        deadline = asyncio.get_running_loop().time() + 5
        while worker._lease_task is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert worker._lease_task is not None
        loop = asyncio.get_running_loop()
        stopped_at = loop.time()
        worker.stop()
        await asyncio.wait_for(running, 10)
        client.close()
        return loop.time() - stopped_at

    assert asyncio.run(scenario()) < 2
