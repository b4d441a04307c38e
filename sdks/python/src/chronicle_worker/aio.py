"""The asyncio variant: an async client, and a worker whose handlers are coroutines.

The wire calls are SchedulerClient's, each run in a small thread pool of the
client's own: one implementation of the protocol for both variants, no
third-party HTTP library. Cancelling a call (the worker stopping its long
poll) closes its connection, so the thread ends at once too.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ._shared import (
    DEFAULT_GRACE_SECONDS,
    MAX_PER_CALL,
    MIN_EMPTY_POLL_SECONDS,
    WorkerSettings,
    backoff_delay,
    completion_retry_delay,
    due_heartbeats,
    failure,
    heard,
    resolve_settings,
    run_fields,
    settle,
    success,
)
from .client import DEFAULT_TIMEOUT, Abort, CompleteManyResult, HeartbeatOutcome, SchedulerClient
from .errors import GracePeriodOverError, SchedulerApiError, StaleLeaseError
from .protocol import (
    CompleteRequest,
    Completed,
    Completion,
    Extended,
    Heartbeat,
    LeasedRun,
    LeaseNextRequest,
    LeaseRequest,
)

_log = logging.getLogger("chronicle_worker")
_T = TypeVar("_T")

#: Calls at once: the long poll, a completion call, a heartbeat call, and handlers' own heartbeats.
_CALL_THREADS = 8


class AsyncSchedulerClient:
    """SchedulerClient's calls as coroutines; the same errors. Cancelling a call aborts its request."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._client = SchedulerClient(base_url, token, timeout=timeout)
        self._threads = ThreadPoolExecutor(max_workers=_CALL_THREADS, thread_name_prefix="chronicle-call")

    async def lease(self, request: LeaseRequest) -> list[LeasedRun]:
        """Leases up to ``max`` runs, long-polling up to ``waitSeconds``; the list may be empty."""
        return await self._call(self._client.lease, request)

    async def heartbeat(self, run_id: str, fencing_token: int, lease_seconds: int | None = None) -> Extended:
        """Extends the lease; StaleLeaseError when the token is no longer the run's current one."""
        return await self._call(self._client.heartbeat, run_id, fencing_token, lease_seconds)

    async def complete(self, run_id: str, request: CompleteRequest) -> Completed:
        """Reports the outcome; StaleLeaseError when the run is no longer ours."""
        return await self._call(self._client.complete, run_id, request)

    async def heartbeat_many(self, heartbeats: Sequence[Heartbeat]) -> list[HeartbeatOutcome]:
        """Up to 100 heartbeats in one transaction; each run's new expiry, or its own problem, in order."""
        return await self._call(self._client.heartbeat_many, heartbeats)

    async def complete_many(
        self, completions: Sequence[Completion], lease: LeaseNextRequest | None = None
    ) -> CompleteManyResult:
        """Up to 100 outcomes in one transaction; with ``lease``, the same transaction leases the next runs."""
        return await self._call(self._client.complete_many, completions, lease)

    def close(self) -> None:
        """Lets the client's threads go once their calls are done."""
        self._threads.shutdown(wait=False)

    async def _call(self, method: Callable[..., _T], *args: Any) -> _T:
        abort = Abort()
        call = functools.partial(method, *args, abort=abort)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._threads, call)
        except asyncio.CancelledError:
            abort.abort()
            raise


class AsyncRunContext:
    """What a coroutine handler gets besides the run.

    When the run is no longer ours (stale-lease) or shutdown's grace is over,
    the handler's task is cancelled: ``cancel_reason`` says why.
    """

    def __init__(self, run: LeasedRun, heartbeat: Callable[[], Awaitable[None]]) -> None:
        self.run_id = run.run_id
        #: The same on every attempt: hand it to downstream systems (an Idempotency-Key header, say).
        self.idempotency_key = run.idempotency_key
        #: Hand it to fenced storage: a write with an older token than the last one seen must be refused.
        self.fencing_token = run.fencing_token
        self.attempt = run.attempt
        #: The job is in dry run: log what the run would do and do none of it.
        self.dry_run = run.dry_run
        #: Why the handler was cancelled: StaleLeaseError or GracePeriodOverError.
        self.cancel_reason: BaseException | None = None
        self._heartbeat = heartbeat

    async def heartbeat(self) -> None:
        """Extends the lease now (heartbeats are also automatic); raises StaleLeaseError if the run is gone."""
        await self._heartbeat()


#: Returns: the run succeeded. Raises: it failed, retryable unless the exception is a NonRetryableError.
AsyncRunHandler = Callable[[LeasedRun, AsyncRunContext], Awaitable[None]]


class _Execution:
    """One leased run: ``handling`` -> ``completing`` -> ``done``, or straight to ``done`` when lost or abandoned."""

    def __init__(self, run: LeasedRun, context: AsyncRunContext) -> None:
        self.run = run
        self.context = context
        self.phase = "handling"
        self.lease_ends_at = run.lease_expires_at.timestamp()
        self.next_beat = float("inf")
        self.handler_task: asyncio.Future[None] | None = None
        self.given_up = asyncio.Event()

    def release(self, reason: BaseException) -> None:
        """Gives the run up: its handler is cancelled and its result, if any, dropped."""
        self.phase = "done"
        what = "lease lost" if isinstance(reason, StaleLeaseError) else "grace period over"
        _log.warning("%s: cancelling the handler", what, extra={"run": run_fields(self.run)})
        self.context.cancel_reason = reason
        self.given_up.set()
        if self.handler_task is not None:
            self.handler_task.cancel(str(reason))


class AsyncWorker:
    """Leases runs from ``queues`` and awaits ``handler`` on each, at most ``concurrency`` at a time.

    ``await run()`` until ``stop()`` (or a signal, with ``stop_on_signals()``)
    has stopped leasing and the runs in flight are done. Same options as Worker.
    """

    def __init__(
        self,
        client: AsyncSchedulerClient,
        queues: Sequence[str],
        handler: AsyncRunHandler,
        *,
        concurrency: int = 10,
        lease_seconds: int = 30,
        wait_seconds: int = 20,
        heartbeat_interval: float | None = None,
        worker_id: str | None = None,
        prefetch_ms: int = 0,
    ) -> None:
        self._client = client
        self._handler = handler
        self._settings: WorkerSettings = resolve_settings(
            queues, concurrency, lease_seconds, wait_seconds, heartbeat_interval, worker_id, prefetch_ms
        )
        self._in_flight: set[_Execution] = set()
        self._handling: set[_Execution] = set()
        self._reserved = 0
        self._completions: list[tuple[Completion, asyncio.Future[Completed]]] = []
        self._change = asyncio.Event()
        self._stopping = asyncio.Event()
        self._lease_task: asyncio.Task[list[LeasedRun]] | None = None
        self._grace_deadline = float("inf")
        self._grace_over = False
        self._started = False
        self._finished = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._remove_signals: Callable[[], None] | None = None

    async def run(self) -> None:
        """Leases and handles runs until ``stop()``; returns when nothing is left in flight."""
        if self._started:
            raise RuntimeError("AsyncWorker.run() was already called; a worker runs once")
        self._started = True
        senders = [asyncio.create_task(self._send_heartbeats()), asyncio.create_task(self._send_completions())]
        try:
            await self._lease_loop()
            await self._drain()
        finally:
            self._finished = True
            self._notify()
            await asyncio.gather(*senders, return_exceptions=True)
            if self._remove_signals is not None:
                self._remove_signals()
        _log.info("worker stopped")

    def stop(self, grace_seconds: float = DEFAULT_GRACE_SECONDS) -> None:
        """Stops leasing at once; in-flight handlers may finish and complete within ``grace_seconds``.

        Handlers still running after that are cancelled and their runs left
        to their lease expiry. Returns at once; a second call may shorten the
        grace period, never lengthen it. Call it on the worker's loop.
        """
        if not self._stopping.is_set():
            _log.info("shutting down: leasing stopped", extra={"inFlight": len(self._in_flight)})
        self._stopping.set()
        self._grace_deadline = min(self._grace_deadline, time.monotonic() + grace_seconds)
        if self._lease_task is not None:
            self._lease_task.cancel()
        self._notify()

    def stop_on_signals(
        self,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
    ) -> None:
        """Stops on SIGTERM or SIGINT (a second one skips the rest of the grace period).

        Call it on the running loop, before ``run()``; the handlers go when ``run()`` returns.
        """
        loop = asyncio.get_running_loop()
        received = 0

        def on_signal(sig: signal.Signals) -> None:
            nonlocal received
            received += 1
            _log.info("%s received", sig.name, extra={"inFlight": len(self._in_flight)})
            self.stop(grace_seconds if received == 1 else 0)

        for sig in signals:
            loop.add_signal_handler(sig, on_signal, sig)

        def remove() -> None:
            for sig in signals:
                loop.remove_signal_handler(sig)

        self._remove_signals = remove

    def _notify(self) -> None:
        """Wakes whatever waits for the worker's state to change (each waiter looks again)."""
        self._change.set()
        self._change = asyncio.Event()

    async def _changed(self, timeout: float | None = None) -> None:
        """Waits for the next change of the worker's state, or ``timeout`` seconds."""
        change = self._change
        try:
            await asyncio.wait_for(change.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    async def _lease_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            free = self._free_slots()
            # While completions are on their way, their calls lease the next runs: no call of its own.
            if free <= 0 or len(self._in_flight) > len(self._handling):
                await self._changed()
                continue
            max_runs = min(free, MAX_PER_CALL)
            self._reserved += max_runs
            asked_at = time.monotonic()
            self._lease_task = asyncio.create_task(self._client.lease(self._settings.lease_request(max_runs)))
            try:
                leases = await self._lease_task
            except asyncio.CancelledError:
                if self._stopping.is_set():
                    break  # stop() cancelled the long poll
                raise
            except Exception as error:  # noqa: BLE001 - whatever failed, the loop backs off and asks again
                failures += 1
                delay = backoff_delay(failures)
                _log.warning("lease failed; retrying in %.2f s: %s", delay, error, extra={"failures": failures})
                await self._sleep_unless_stopping(delay)
                continue
            finally:
                self._lease_task = None
                self._reserved -= max_runs
            failures = 0
            for run in leases:
                self._start(run)
            elapsed = time.monotonic() - asked_at
            if not leases and elapsed < MIN_EMPTY_POLL_SECONDS:
                await self._sleep_unless_stopping(MIN_EMPTY_POLL_SECONDS - elapsed)

    async def _sleep_unless_stopping(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    def _free_slots(self) -> int:
        return self._settings.free_slots(len(self._handling), len(self._in_flight), self._reserved)

    async def _drain(self) -> None:
        """Waits for the runs in flight; cancels the handlers still running once the grace period is over."""
        while self._in_flight or self._reserved > 0:
            remaining = self._grace_deadline - time.monotonic()
            if remaining <= 0 and not self._grace_over:
                self._grace_over = True
                for execution in list(self._handling):
                    execution.release(GracePeriodOverError("worker shutdown: grace period over"))
                    self._handling.discard(execution)
                    self._in_flight.discard(execution)
                continue
            await self._changed(None if self._grace_over or remaining == float("inf") else remaining)

    def _start(self, run: LeasedRun) -> None:
        if self._grace_over:
            _log.warning("run leased after the grace period; left to its lease expiry", extra={"runId": run.run_id})
            return
        execution = _Execution(run, AsyncRunContext(run, lambda: self._heartbeat_now(execution)))
        self._in_flight.add(execution)
        self._handling.add(execution)
        task = asyncio.create_task(self._execute(execution))
        # The loop keeps only weak references to tasks: hold each until it is done.
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _execute(self, execution: _Execution) -> None:
        try:
            if not await self._wait_for_not_before(execution):
                return
            completion = await self._handle(execution)
            self._handling.discard(execution)
            self._notify()
            if completion is not None and execution.phase == "handling":
                execution.phase = "completing"
                await self._complete(execution, completion)
                execution.phase = "done"
            else:
                _log.info("result dropped: the run is no longer ours", extra={"run": run_fields(execution.run)})
        finally:
            self._handling.discard(execution)
            self._in_flight.discard(execution)
            self._notify()

    async def _wait_for_not_before(self, execution: _Execution) -> bool:
        """Holds a prefetched run until its due time; False when it was given up meanwhile."""
        not_before = execution.run.not_before
        if not_before is not None:
            try:
                await asyncio.wait_for(execution.given_up.wait(), max(0.0, not_before.timestamp() - time.time()))
            except asyncio.TimeoutError:
                pass
        if execution.phase != "handling":
            return False
        execution.next_beat = time.monotonic() + self._settings.heartbeat_interval
        self._notify()
        return True

    async def _handle(self, execution: _Execution) -> Completion | None:
        """Awaits the handler in a task of its own, so that losing the run can cancel it; None when it did."""
        run = execution.run
        task = asyncio.ensure_future(self._handler(run, execution.context))
        execution.handler_task = task
        await asyncio.wait({task})
        if task.cancelled() and execution.phase != "handling":
            return None
        if task.cancelled():
            # Cancelled by something other than this worker: a failure like any other, retried by the job's policy.
            return failure(run, asyncio.CancelledError("the handler was cancelled"))
        error = task.exception()
        return success(run) if error is None else failure(run, error)

    async def _complete(self, execution: _Execution, completion: Completion) -> None:
        """Completes the run, retrying transient failures while the lease lasts (as Worker does)."""
        attempt = 0
        while True:
            attempt += 1
            answer: asyncio.Future[Completed] = asyncio.get_running_loop().create_future()
            self._completions.append((completion, answer))
            self._notify()
            try:
                await answer
                return
            except Exception as error:  # noqa: BLE001 - sorted by completion_retry_delay
                delay = completion_retry_delay(execution, error, attempt)
                if delay is None:
                    return
                await asyncio.sleep(delay)

    async def _send_completions(self) -> None:
        """Sends the completions waiting, up to 100 a call; each call leases runs for the free slots."""
        while True:
            if not self._completions:
                if self._finished:
                    return
                await self._changed()
                continue
            batch = self._completions[:MAX_PER_CALL]
            del self._completions[:MAX_PER_CALL]
            lease_max = 0 if self._stopping.is_set() else max(0, min(self._free_slots(), MAX_PER_CALL))
            self._reserved += lease_max
            leased: list[LeasedRun] = []
            try:
                lease = self._settings.lease_next_request(lease_max) if lease_max > 0 else None
                answer = await self._client.complete_many([completion for completion, _ in batch], lease)
                leased = answer.leases
                settle(batch, answer.results)
            except Exception as error:  # noqa: BLE001 - a failed call fails each of its runs, which retry
                for _, future in batch:
                    future.set_exception(error)
            finally:
                self._reserved -= lease_max
                for run in leased:
                    self._start(run)
                self._notify()

    async def _send_heartbeats(self) -> None:
        """Sends the heartbeats that are due, together; a failed one is retried at the next beat."""
        interval = self._settings.heartbeat_interval
        while not self._finished:
            now = time.monotonic()
            due, next_beat = due_heartbeats(self._handling, now, interval)
            if not due:
                await self._changed(None if next_beat == float("inf") else next_beat - now)
                continue
            for start in range(0, len(due), MAX_PER_CALL):
                await self._heartbeat_batch(due[start : start + MAX_PER_CALL])

    async def _heartbeat_batch(self, executions: list[_Execution]) -> None:
        try:
            outcomes = await self._client.heartbeat_many(self._settings.heartbeats(e.run for e in executions))
        except Exception as error:  # noqa: BLE001 - transient: the next beat, a third of a lease later, retries
            _log.warning("heartbeat failed: %s", error, extra={"runs": len(executions)})
            return
        for execution, outcome in zip(executions, outcomes):
            heard(execution, outcome)

    async def _heartbeat_now(self, execution: _Execution) -> None:
        """``context.heartbeat()``: one heartbeat, at once."""
        try:
            outcome: Extended | SchedulerApiError = await self._client.heartbeat(
                execution.run.run_id, execution.run.fencing_token, self._settings.lease_seconds
            )
        except StaleLeaseError as error:
            outcome = error
        heard(execution, outcome)
        if isinstance(outcome, SchedulerApiError):
            raise outcome
