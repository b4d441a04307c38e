"""What the sync and asyncio workers share: their settings, checked once, and the backoff of their retries."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from .protocol import LeaseNextRequest, LeaseRequest

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
