"""What the sync and asyncio workers share: their settings, checked once, and every decision that does
not depend on running handlers in threads or in tasks (free slots, completions, heartbeats due, the
answers of a batch call, retrying a completion). The two workers differ in how they wait, not in what
they decide.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .errors import NonRetryableError, RetryLater, SchedulerApiError, StaleLeaseError, is_transient
from .protocol import Completed, Completion, Extended, Heartbeat, LeasedRun, LeaseNextRequest, LeaseRequest

_log = logging.getLogger("chronicle_worker")

#: The protocol's ceiling for one lease call, and for the runs of one batch call.
MAX_PER_CALL = 100
#: The server's most for a lease's prefetchMs (it refuses more with validation-error).
PREFETCH_MS_LIMIT = 2000
#: An empty lease answer sooner than this (wait_seconds 0) waits out the rest, so an idle worker does not spin.
MIN_EMPTY_POLL_SECONDS = 1.0
DEFAULT_GRACE_SECONDS = 30.0
#: The server refuses a completion's error beyond 10,000 characters; this is enough to find the cause.
MAX_ERROR_LENGTH = 4000


@dataclass(frozen=True)
class WorkerSettings:
    """A worker's settings with the defaults filled in; a bad value fails the constructor, not the first lease."""

    queues: tuple[str, ...]
    concurrency: int
    lease_seconds: int
    wait_seconds: int
    heartbeat_interval: float
    worker_id: str | None
    prefetch_ms: int

    def lease_request(self, max_runs: int) -> LeaseRequest:
        """A ``POST /v1/lease`` body for ``max_runs`` free slots."""
        request: LeaseRequest = {"queues": list(self.queues), "max": max_runs, "waitSeconds": self.wait_seconds}
        request["leaseSeconds"] = self.lease_seconds
        if self.worker_id is not None:
            request["workerId"] = self.worker_id
        # Sent only when asked for: a server from before prefetch refuses unknown fields.
        if self.prefetch_ms > 0:
            request["prefetchMs"] = self.prefetch_ms
        return request

    def lease_next_request(self, max_runs: int) -> LeaseNextRequest:
        """The ``lease`` of a completion call: the same, without the long poll."""
        request: LeaseNextRequest = {"queues": list(self.queues), "max": max_runs, "leaseSeconds": self.lease_seconds}
        if self.worker_id is not None:
            request["workerId"] = self.worker_id
        if self.prefetch_ms > 0:
            request["prefetchMs"] = self.prefetch_ms
        return request

    def heartbeats(self, runs: Iterable[LeasedRun]) -> list[Heartbeat]:
        """A ``POST /v1/runs:heartbeat`` body's heartbeats: each run's lease extended by ``lease_seconds``."""
        return [{"runId": r.run_id, "fencingToken": r.fencing_token, "leaseSeconds": self.lease_seconds} for r in runs]

    def free_slots(self, handling: int, in_flight: int, reserved: int) -> int:
        """Slots free for new runs: a slot frees when its handler returns; completions on their way are
        held to as many again, so a slow server slows leasing instead of piling up leased runs."""
        concurrency = self.concurrency
        return min(concurrency - handling, 2 * concurrency - in_flight) - reserved


def resolve_settings(
    queues: Sequence[str],
    concurrency: int,
    lease_seconds: int,
    wait_seconds: int,
    heartbeat_interval: float | None,
    worker_id: str | None,
    prefetch_ms: int,
) -> WorkerSettings:
    """The settings, checked against what the server accepts; ValueError names the first bad one."""
    if isinstance(queues, str):
        raise ValueError("queues must be a list of queue names, not one string")
    if len(queues) == 0:
        raise ValueError("queues must name at least one queue")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    if not 1 <= lease_seconds <= 3600:
        raise ValueError(f"lease_seconds must be a whole number in [1, 3600], not {lease_seconds}")
    if not 0 <= wait_seconds <= 30:
        raise ValueError(f"wait_seconds must be in [0, 30], not {wait_seconds}")
    if not 0 <= prefetch_ms <= PREFETCH_MS_LIMIT:
        raise ValueError(f"prefetch_ms must be in [0, {PREFETCH_MS_LIMIT}], not {prefetch_ms}")
    # A third of the lease: two heartbeats can fail before it lapses.
    interval = heartbeat_interval if heartbeat_interval is not None else lease_seconds / 3
    if not 0 < interval < lease_seconds:
        raise ValueError(f"heartbeat_interval must be positive and shorter than the lease, not {interval}")
    return WorkerSettings(
        queues=tuple(queues),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        heartbeat_interval=interval,
        worker_id=worker_id,
        prefetch_ms=prefetch_ms,
    )


def backoff_delay(failures: int, initial: float = 0.1, maximum: float = 5.0) -> float:
    """Seconds to wait after the ``failures``-th failure in a row: capped exponential with "equal jitter".

    Between half and all of the exponential delay, so workers that lost the
    server together do not come back in lockstep, and the delay still grows.
    """
    exponential = min(maximum, initial * 2.0 ** max(0, failures - 1))
    return exponential / 2 + random.random() * exponential / 2


def describe(error: BaseException) -> str:
    """A failed handler's error as the completion carries it, cut to what the server takes."""
    text = str(error) or type(error).__name__
    return text if len(text) <= MAX_ERROR_LENGTH else text[:MAX_ERROR_LENGTH] + "..."


def success(run: LeasedRun) -> Completion:
    return {"runId": run.run_id, "fencingToken": run.fencing_token, "outcome": "success"}


def failure(run: LeasedRun, error: BaseException) -> Completion:
    """The completion of a handler that raised: retryable unless the error is a NonRetryableError; a
    RetryLater's wait instead of the job's backoff."""
    completion: Completion = {
        "runId": run.run_id,
        "fencingToken": run.fencing_token,
        "outcome": "failure",
        "error": describe(error),
        "retryable": not isinstance(error, NonRetryableError),
    }
    if isinstance(error, RetryLater):
        completion["retryAfterSeconds"] = error.retry_after_seconds
    return completion


def run_fields(run: LeasedRun) -> dict[str, Any]:
    """A run as the workers' log lines name it."""
    return {"runId": run.run_id, "job": run.job, "attempt": run.attempt, "fencingToken": run.fencing_token}


class Execution(Protocol):
    """What the shared decisions read and change of a worker's leased run."""

    run: LeasedRun
    phase: str
    lease_ends_at: float
    next_beat: float

    def release(self, reason: BaseException) -> None: ...


E = TypeVar("E", bound=Execution)


def due_heartbeats(handling: Iterable[E], now: float, interval: float) -> tuple[list[E], float]:
    """The runs whose automatic heartbeat is due (their next one set ``interval`` on), or, when none is,
    the time (time.monotonic()) the next one falls due (infinity: none)."""
    beating = [execution for execution in handling if execution.phase == "handling"]
    due = [execution for execution in beating if execution.next_beat <= now]
    for execution in due:
        execution.next_beat = now + interval
    next_beat = float("inf") if due else min((e.next_beat for e in beating), default=float("inf"))
    return due, next_beat


def heard(execution: Execution, outcome: Extended | SchedulerApiError) -> None:
    """A heartbeat's answer: the lease's new end, or the run lost (stale-lease) and its handler told."""
    if isinstance(outcome, Extended):
        if outcome.lease_expires_at is not None:
            execution.lease_ends_at = outcome.lease_expires_at.timestamp()
    elif isinstance(outcome, StaleLeaseError):
        # Completing already: the server answers stale-lease to a heartbeat that lands after it.
        if execution.phase == "handling":
            execution.release(outcome)
    else:
        _log.warning("heartbeat refused: %s", outcome, extra={"run": run_fields(execution.run)})


def completion_retry_delay(execution: Execution, error: Exception, attempt: int) -> float | None:
    """Seconds before completing again after ``error`` (the ``attempt``-th failure), or None to give up.

    Completion is idempotent on the server, so a lost answer or a refusal of
    the moment (503, the database away) is retried; a stale lease is not, and
    once the lease has expired the run is the server's to lease again.
    """
    fields = {"run": run_fields(execution.run)}
    if isinstance(error, StaleLeaseError):
        _log.warning("completion refused, stale lease: result dropped", extra=fields)
        return None
    delay = backoff_delay(attempt)
    if not is_transient(error) or time.time() + delay >= execution.lease_ends_at:
        _log.error("could not complete the run; it runs again after its lease expires: %s", error, extra=fields)
        return None
    return delay


class Answer(Protocol):
    """A caller's future answer: concurrent.futures.Future or asyncio.Future."""

    def set_result(self, result: Completed, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


def settle(batch: Sequence[tuple[Completion, Answer]], results: Sequence[Completed | SchedulerApiError]) -> None:
    """Hands each caller its own answer from a batch answer (in order, one per completion)."""
    for index, (completion, future) in enumerate(batch):
        result = results[index] if index < len(results) else None
        if isinstance(result, SchedulerApiError):
            future.set_exception(result)
        elif result is None or result.run_id != completion["runId"]:
            future.set_exception(RuntimeError(f"the server answered no result for run {completion['runId']}"))
        else:
            future.set_result(result)
