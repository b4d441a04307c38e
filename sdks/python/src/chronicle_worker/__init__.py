"""The worker SDK of the Chronicle job scheduler.

``SchedulerClient`` speaks the worker protocol (lease, heartbeat, complete);
``Worker`` runs a handler on leased runs in threads, ``AsyncWorker``
(``chronicle_worker.aio``) runs a coroutine handler on an asyncio loop.
"""

from .aio import AsyncRunContext, AsyncRunHandler, AsyncSchedulerClient, AsyncWorker
from .client import Abort, CompleteManyResult, SchedulerClient
from .errors import (
    STALE_LEASE_PROBLEM,
    CallAbortedError,
    GracePeriodOverError,
    NonRetryableError,
    RetryLater,
    SchedulerApiError,
    SchedulerError,
    StaleLeaseError,
    TransportError,
    is_transient,
)
from .protocol import (
    Completed,
    CompleteRequest,
    Completion,
    Extended,
    Heartbeat,
    LeasedRun,
    LeaseNextRequest,
    LeaseRequest,
    RunOutcome,
)
from .worker import RunContext, RunHandler, Worker

__all__ = [
    "STALE_LEASE_PROBLEM",
    "Abort",
    "AsyncRunContext",
    "AsyncRunHandler",
    "AsyncSchedulerClient",
    "AsyncWorker",
    "CallAbortedError",
    "CompleteManyResult",
    "CompleteRequest",
    "Completed",
    "Completion",
    "Extended",
    "GracePeriodOverError",
    "Heartbeat",
    "LeaseNextRequest",
    "LeaseRequest",
    "LeasedRun",
    "NonRetryableError",
    "RetryLater",
    "RunContext",
    "RunHandler",
    "RunOutcome",
    "SchedulerApiError",
    "SchedulerClient",
    "SchedulerError",
    "StaleLeaseError",
    "TransportError",
    "Worker",
    "is_transient",
]
