"""The thread-based worker: leases runs, calls a handler on each, heartbeats and completes them.

One thread per run's handler (at most ``concurrency`` at once), one that
sends the heartbeats that fall due together in one call, one that sends the
completions that finish together in one call (which also leases the next
runs), and the lease loop in the thread that calls ``run()``.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from types import FrameType

from .client import Abort, SchedulerClient
from .errors import CallAbortedError, GracePeriodOverError, SchedulerApiError, StaleLeaseError
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
from .protocol import Completed, Completion, Extended, LeasedRun

_log = logging.getLogger("chronicle_worker")


class RunContext:
    """What a handler gets besides the run: the keys to hand downstream, and whether the run is still ours.

    Python cannot stop a thread: a handler that works for long should look at
    ``cancelled`` (or call ``raise_if_cancelled()``) between steps and stop
    soon after it is set.
    """

    def __init__(self, run: LeasedRun, heartbeat: Callable[[], None]) -> None:
        self.run_id = run.run_id
        #: The same on every attempt: hand it to downstream systems (an Idempotency-Key header, say).
        self.idempotency_key = run.idempotency_key
        #: Hand it to fenced storage: a write with an older token than the last one seen must be refused.
        self.fencing_token = run.fencing_token
        self.attempt = run.attempt
        #: The job is in dry run: log what the run would do and do none of it.
        self.dry_run = run.dry_run
        #: Set when the run is no longer ours (StaleLeaseError) or shutdown's grace is over (GracePeriodOverError).
        self.cancelled = threading.Event()
        #: Why ``cancelled`` is set.
        self.cancel_reason: BaseException | None = None
        self._heartbeat = heartbeat

    def heartbeat(self) -> None:
        """Extends the lease now (heartbeats are also automatic); raises StaleLeaseError if the run is gone."""
        self._heartbeat()

    def raise_if_cancelled(self) -> None:
        """Raises the reason the run was given up, if it was: the handler's result would be dropped anyway."""
        if self.cancel_reason is not None:
            raise self.cancel_reason

    def _cancel(self, reason: BaseException) -> None:
        self.cancel_reason = reason
        self.cancelled.set()


#: Returns: the run succeeded. Raises: it failed, retryable unless the exception is a NonRetryableError.
RunHandler = Callable[[LeasedRun, RunContext], None]


class _Execution:
    """One leased run: ``handling`` -> ``completing`` -> ``done``, or straight to ``done`` when lost or abandoned."""

    def __init__(self, run: LeasedRun, context: RunContext) -> None:
        self.run = run
        self.context = context
        self.phase = "handling"
        #: When the lease ends (time.time()) as this worker last heard: the lease's answer, then each heartbeat's.
        self.lease_ends_at = run.lease_expires_at.timestamp()
        #: When the next automatic heartbeat is due (time.monotonic()); none before the handler starts.
        self.next_beat = float("inf")

    def release(self, reason: BaseException) -> None:
        """Gives the run up: the handler's result will be dropped, and the handler is told."""
        self.phase = "done"
        what = "lease lost" if isinstance(reason, StaleLeaseError) else "grace period over"
        _log.warning("%s: the handler's result will be dropped", what, extra={"run": run_fields(self.run)})
        self.context._cancel(reason)


class Worker:
    """Leases runs from ``queues`` and calls ``handler`` on each, at most ``concurrency`` at a time.

    ``run()`` blocks until ``stop()`` (or a signal, with ``stop_on_signals()``)
    has stopped leasing and the runs in flight are done.
    """

    def __init__(
        self,
        client: SchedulerClient,
        queues: Sequence[str],
        handler: RunHandler,
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
        # Reentrant: stop() runs in a signal handler, which may interrupt the main thread holding it.
        self._changed = threading.Condition(threading.RLock())
        #: Runs this worker owes something: a handler running, or a completion not yet answered.
        self._in_flight: set[_Execution] = set()
        #: Runs whose handler is running: the slots ``concurrency`` counts.
        self._handling: set[_Execution] = set()
        #: Slots promised to lease requests not yet answered (the long poll, or a completion call that leases).
        self._reserved = 0
        self._completions: list[tuple[Completion, Future[Completed]]] = []
        self._stop_leasing = Abort()
        self._stopping = threading.Event()
        self._grace_deadline = float("inf")
        self._grace_over = False
        self._started = False
        self._finished = False
        self._restore_signals: Callable[[], None] | None = None

    def run(self) -> None:
        """Leases and handles runs until ``stop()``; returns when nothing is left in flight."""
        with self._changed:
            if self._started:
                raise RuntimeError("Worker.run() was already called; a worker runs once")
            self._started = True
        threads = [
            threading.Thread(target=self._send_heartbeats, name="chronicle-heartbeats", daemon=True),
            threading.Thread(target=self._send_completions, name="chronicle-completions", daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            self._lease_loop()
            self._drain()
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()
            for thread in threads:
                thread.join()
            if self._restore_signals is not None:
                self._restore_signals()
        _log.info("worker stopped")

    def stop(self, grace_seconds: float = DEFAULT_GRACE_SECONDS) -> None:
        """Stops leasing at once and lets in-flight handlers finish and complete within ``grace_seconds``.

        Handlers still running after that are told (``context.cancelled``),
        their runs left uncompleted to their lease expiry, and ``run()``
        returns. Returns at once; a second call may shorten the grace period,
        never lengthen it. Safe to call from a signal handler or any thread.
        """
        with self._changed:
            if not self._stopping.is_set():
                _log.info("shutting down: leasing stopped", extra={"inFlight": len(self._in_flight)})
            self._stopping.set()
            self._grace_deadline = min(self._grace_deadline, time.monotonic() + grace_seconds)
            self._changed.notify_all()
        self._stop_leasing.abort()

    def stop_on_signals(
        self,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
    ) -> None:
        """Stops on SIGTERM or SIGINT (a second one skips the rest of the grace period).

        Call it from the main thread, before ``run()``; the previous handlers
        are put back when ``run()`` returns.
        """
        received = 0

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            nonlocal received
            received += 1
            _log.info("%s received", signal.Signals(signum).name, extra={"inFlight": len(self._in_flight)})
            self.stop(grace_seconds if received == 1 else 0)

        previous = {sig: signal.signal(sig, on_signal) for sig in signals}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        self._restore_signals = restore

    # The lease loop, in run()'s thread.

    def _lease_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            with self._changed:
                free = self._free_slots()
                # While completions are on their way, their calls lease the next runs: no call of its own.
                owed = len(self._in_flight) - len(self._handling)
                if free <= 0 or owed > 0:
                    self._changed.wait()
                    continue
                max_runs = min(free, MAX_PER_CALL)
                self._reserved += max_runs
            asked_at = time.monotonic()
            try:
                leases = self._client.lease(self._settings.lease_request(max_runs), abort=self._stop_leasing)
            except CallAbortedError:
                break  # stop() aborted the long poll
            except Exception as error:  # noqa: BLE001 - whatever failed, the loop backs off and asks again
                failures += 1
                delay = backoff_delay(failures)
                _log.warning("lease failed; retrying in %.2f s: %s", delay, error, extra={"failures": failures})
                self._stopping.wait(delay)
                continue
            finally:
                with self._changed:
                    self._reserved -= max_runs
            failures = 0
            for run in leases:
                self._start(run)
            elapsed = time.monotonic() - asked_at
            if not leases and elapsed < MIN_EMPTY_POLL_SECONDS:
                self._stopping.wait(MIN_EMPTY_POLL_SECONDS - elapsed)

    def _free_slots(self) -> int:
        return self._settings.free_slots(len(self._handling), len(self._in_flight), self._reserved)

    def _drain(self) -> None:
        """Waits for the runs in flight; gives up the handlers still running once the grace period is over."""
        with self._changed:
            # A completion call under way may still lease runs (asked before stop): they run too.
            while self._in_flight or self._reserved > 0:
                remaining = self._grace_deadline - time.monotonic()
                if remaining <= 0 and not self._grace_over:
                    self._abandon_handling()
                    continue
                self._changed.wait(None if self._grace_over or remaining == float("inf") else remaining)

    def _abandon_handling(self) -> None:
        self._grace_over = True
        for execution in list(self._handling):
            execution.release(GracePeriodOverError("worker shutdown: grace period over"))
            self._handling.discard(execution)
            self._in_flight.discard(execution)

    # One run: its handler thread, and its completion.

    def _start(self, run: LeasedRun) -> None:
        with self._changed:
            if self._grace_over:
                _log.warning("run leased after the grace period; left to its lease expiry", extra={"runId": run.run_id})
                return
            execution = _Execution(run, RunContext(run, lambda: self._heartbeat_now(execution)))
            self._in_flight.add(execution)
            self._handling.add(execution)
        threading.Thread(target=self._execute, args=(execution,), name=f"chronicle-{run.run_id}", daemon=True).start()

    def _execute(self, execution: _Execution) -> None:
        try:
            if not self._wait_for_not_before(execution):
                return
            completion = self._handle(execution)
            with self._changed:
                self._handling.discard(execution)
                self._changed.notify_all()
                ours = execution.phase == "handling"
                if ours:
                    execution.phase = "completing"
            if ours:
                self._complete(execution, completion)
                execution.phase = "done"
            else:
                _log.info("result dropped: the run is no longer ours", extra={"run": run_fields(execution.run)})
        finally:
            with self._changed:
                self._handling.discard(execution)
                self._in_flight.discard(execution)
                self._changed.notify_all()

    def _wait_for_not_before(self, execution: _Execution) -> bool:
        """Holds a prefetched run until its due time; False when it was given up meanwhile."""
        not_before = execution.run.not_before
        if not_before is not None:
            execution.context.cancelled.wait(max(0.0, not_before.timestamp() - time.time()))
        with self._changed:
            if execution.phase != "handling":
                return False
            execution.next_beat = time.monotonic() + self._settings.heartbeat_interval
            self._changed.notify_all()
        return True

    def _handle(self, execution: _Execution) -> Completion:
        """Calls the handler; the completion its return or its exception makes."""
        try:
            self._handler(execution.run, execution.context)
        except Exception as error:  # noqa: BLE001 - any failure of the handler is the run's failure
            return failure(execution.run, error)
        return success(execution.run)

    def _complete(self, execution: _Execution, completion: Completion) -> None:
        """Completes the run, retrying transient failures while the lease lasts (completion_retry_delay)."""
        attempt = 0
        while True:
            attempt += 1
            answer: Future[Completed] = Future()
            with self._changed:
                self._completions.append((completion, answer))
                self._changed.notify_all()
            try:
                answer.result()
                return
            except Exception as error:  # noqa: BLE001 - sorted by completion_retry_delay
                delay = completion_retry_delay(execution, error, attempt)
                if delay is None:
                    return
                time.sleep(delay)

    # The batch senders, each in a thread of its own.

    def _send_completions(self) -> None:
        """Sends the completions waiting, up to 100 a call; each call leases runs for the free slots."""
        while True:
            with self._changed:
                while not self._completions and not self._finished:
                    self._changed.wait()
                if not self._completions:
                    return
                batch = self._completions[:MAX_PER_CALL]
                del self._completions[:MAX_PER_CALL]
                free = min(self._free_slots(), MAX_PER_CALL)
                lease_max = 0 if self._stopping.is_set() else max(0, free)
                self._reserved += lease_max
            leased: list[LeasedRun] = []
            try:
                lease = self._settings.lease_next_request(lease_max) if lease_max > 0 else None
                answer = self._client.complete_many([completion for completion, _ in batch], lease)
                leased = answer.leases
                settle(batch, answer.results)
            except Exception as error:  # noqa: BLE001 - a failed call fails each of its runs, which retry
                for _, future in batch:
                    future.set_exception(error)
            finally:
                with self._changed:
                    self._reserved -= lease_max
                    self._changed.notify_all()
                for run in leased:
                    self._start(run)

    def _send_heartbeats(self) -> None:
        """Sends the heartbeats that are due, together; a failed one is retried at the next beat."""
        interval = self._settings.heartbeat_interval
        while True:
            with self._changed:
                if self._finished:
                    return
                now = time.monotonic()
                due, next_beat = due_heartbeats(self._handling, now, interval)
                if not due:
                    self._changed.wait(None if next_beat == float("inf") else next_beat - now)
                    continue
            for start in range(0, len(due), MAX_PER_CALL):
                self._heartbeat_batch(due[start : start + MAX_PER_CALL])

    def _heartbeat_batch(self, executions: list[_Execution]) -> None:
        try:
            outcomes = self._client.heartbeat_many(self._settings.heartbeats(e.run for e in executions))
        except Exception as error:  # noqa: BLE001 - transient: the next beat, a third of a lease later, retries
            _log.warning("heartbeat failed: %s", error, extra={"runs": len(executions)})
            return
        for execution, outcome in zip(executions, outcomes):
            self._heard(execution, outcome)

    def _heartbeat_now(self, execution: _Execution) -> None:
        """``context.heartbeat()``: one heartbeat, at once."""
        if execution.phase == "done" and execution.context.cancel_reason is not None:
            raise execution.context.cancel_reason
        try:
            outcome: Extended | SchedulerApiError = self._client.heartbeat(
                execution.run.run_id, execution.run.fencing_token, self._settings.lease_seconds
            )
        except StaleLeaseError as error:
            outcome = error
        self._heard(execution, outcome)
        if isinstance(outcome, SchedulerApiError):
            raise outcome

    def _heard(self, execution: _Execution, outcome: Extended | SchedulerApiError) -> None:
        with self._changed:
            heard(execution, outcome)

