"""Wire shapes of the worker protocol (docs/api.md, "The worker protocol").

JSON over HTTP, ``Authorization: Bearer <worker token>`` on every call. The
request bodies are TypedDicts in the server's camelCase, exactly as sent
(the server refuses fields it does not know); the answers are parsed into
frozen dataclasses with Python names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

RunOutcome = Literal["success", "failure"]


class _LeaseRequired(TypedDict):
    queues: list[str]
    #: 1..100 runs per call.
    max: int


class LeaseRequest(_LeaseRequired, total=False):
    """``POST /v1/lease`` body."""

    #: 0..30: how long the server may hold the request open waiting for work.
    waitSeconds: int
    #: 1..3600 whole seconds (30 when absent).
    leaseSeconds: int
    workerId: str
    #: 0..2000: runs due within this many milliseconds are leased too, each with its due time as ``notBefore``.
    prefetchMs: int


class LeaseNextRequest(_LeaseRequired, total=False):
    """The ``lease`` of ``POST /v1/runs:complete``: a lease call without the long poll."""

    leaseSeconds: int
    workerId: str
    prefetchMs: int


class _CompleteRequired(TypedDict):
    fencingToken: int
    outcome: RunOutcome


class CompleteRequest(_CompleteRequired, total=False):
    """``POST /v1/runs/{id}/complete`` body."""

    #: Up to 10,000 characters.
    error: str
    #: False sends the run straight to the dead-letter queue (true when absent).
    retryable: bool
    #: A retryable failure's retry waits this long instead of the job's backoff (0-86,400; RetryLater).
    retryAfterSeconds: int


class Completion(CompleteRequest):
    """One completion of ``POST /v1/runs:complete``."""

    runId: str


class _HeartbeatRequired(TypedDict):
    runId: str
    fencingToken: int


class Heartbeat(_HeartbeatRequired, total=False):
    """One heartbeat of ``POST /v1/runs:heartbeat``."""

    leaseSeconds: int


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_timestamp(value: str) -> datetime:
    """An RFC 3339 instant of the server (``2026-03-01T09:00:00.000Z``) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class LeasedRun:
    """One leased run, as ``POST /v1/lease`` (or a completion call that leases) returns it."""

    run_id: str
    job: str
    attempt: int
    #: Stable across attempts: hand it to downstream systems so a rerun has no second effect.
    idempotency_key: str
    #: Grows with every lease of the run; every later call for the run must carry it.
    fencing_token: int
    lease_expires_at: datetime
    payload: Any
    #: The job is in dry run: log what the run would do, and do none of it.
    dry_run: bool = False
    #: Leased ahead of its due time (``prefetch_ms``): start it at this instant, not before.
    not_before: datetime | None = None
    #: The W3C trace context of the request that enqueued the run, if it had one: a span of the
    #: attempt links to it (the scheduler's docs/operations.md, "Traces").
    traceparent: str | None = None
    tracestate: str | None = None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> LeasedRun:
        """Parses one element of an answer's ``leases``."""
        not_before = value.get("notBefore")
        return cls(
            run_id=str(value["runId"]),
            job=str(value["job"]),
            attempt=int(value["attempt"]),
            idempotency_key=str(value["idempotencyKey"]),
            fencing_token=int(value["fencingToken"]),
            lease_expires_at=parse_timestamp(str(value["leaseExpiresAt"])),
            payload=value.get("payload"),
            dry_run=value.get("dryRun") is True,
            not_before=parse_timestamp(not_before) if isinstance(not_before, str) else None,
            traceparent=_text_or_none(value.get("traceparent")),
            tracestate=_text_or_none(value.get("tracestate")),
        )


@dataclass(frozen=True)
class Completed:
    """The answer to one completion: the run's state after it (``succeeded``, ``retry_wait``, ``dead``)."""

    run_id: str
    state: str
    #: ``retry_wait``: when the next attempt is due.
    retry_at: datetime | None = None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Completed:
        retry_at = value.get("retryAt")
        return cls(
            run_id=str(value["runId"]),
            state=str(value.get("state", "unknown")),
            retry_at=parse_timestamp(retry_at) if isinstance(retry_at, str) else None,
        )


@dataclass(frozen=True)
class Extended:
    """The answer to one heartbeat: when the lease now ends."""

    run_id: str
    lease_expires_at: datetime | None

    @classmethod
    def from_json(cls, run_id: str, value: Mapping[str, Any]) -> Extended:
        expires = value.get("leaseExpiresAt")
        return cls(run_id=run_id, lease_expires_at=parse_timestamp(expires) if isinstance(expires, str) else None)
