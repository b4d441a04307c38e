"""The errors of the SDK: the server's RFC 9457 problems as typed exceptions.

Every non-2xx answer of the scheduler is ``application/problem+json`` with a
stable ``type`` (docs/api.md, "Problem types"); callers branch on the
exception class or on ``problem_type``, never on the message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

#: The problem type the server answers (409) when a fencing token is no longer the run's current one.
STALE_LEASE_PROBLEM = "/problems/stale-lease"

#: Enough of a body that is not a problem (a proxy's HTML page, say) to find the cause.
_MAX_FALLBACK_DETAIL = 500


class SchedulerError(Exception):
    """Base class of every error the SDK raises about the scheduler."""


class SchedulerApiError(SchedulerError):
    """A non-2xx answer of the scheduler, from its problem details."""

    def __init__(
        self,
        status: int,
        problem_type: str,
        title: str,
        detail: str,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status = status
        #: The problem's ``type``, e.g. ``/problems/validation-error``; ``about:blank`` when the body had none.
        self.problem_type = problem_type
        self.title = title
        self.detail = detail
        #: The whole problem, with its extensions (``field``, ``quota``, ``retryAfterSeconds``, ...).
        self.problem: Mapping[str, Any] = problem if problem is not None else {}


class StaleLeaseError(SchedulerApiError):
    """The run is no longer ours: another worker holds it, or it was cancelled, or its lease expired."""


class TransportError(SchedulerError):
    """No answer: the connection failed, broke, or the server did not answer in time."""


class CallAbortedError(SchedulerError):
    """The call was aborted on purpose (the worker is stopping); it says nothing about the server."""


class NonRetryableError(Exception):
    """Raised by a handler when retrying cannot help (a bad payload, a rejected request).

    The run is completed with ``retryable: false`` and goes straight to the
    dead-letter queue instead of being retried by the job's policy.
    """


#: The longest wait a failure may ask for before its retry, as the server bounds it (a day).
MAX_RETRY_AFTER_SECONDS = 86_400


class RetryLater(Exception):
    """Raised by a handler when a downstream said when to try again (a 429 or 503 with ``Retry-After``).

    The run is retried after ``retry_after_seconds`` (whole seconds, at most a day) instead of the job's
    backoff, while it has attempts left.
    """

    def __init__(self, message: str, retry_after_seconds: float) -> None:
        super().__init__(message)
        self.retry_after_seconds = min(max(math.ceil(retry_after_seconds), 0), MAX_RETRY_AFTER_SECONDS)


class GracePeriodOverError(Exception):
    """Why a run was given up at shutdown: its handler outlived the grace period.

    The run is not completed; its lease expires and the scheduler hands it on.
    """


def _is_stale_lease(problem_type: str) -> bool:
    # The server renders `/problems/stale-lease`; the bare slug and absolute URIs mean the same.
    return problem_type == "stale-lease" or problem_type.endswith("/stale-lease")


def error_from_problem(
    status: int,
    problem: Mapping[str, Any],
    fallback_title: str = "error",
    fallback_detail: str = "",
) -> SchedulerApiError:
    """The exception for a problem: a whole answer's, or one run's in a batch answer."""

    def field(name: str) -> str | None:
        value = problem.get(name)
        return value if isinstance(value, str) else None

    problem_type = field("type") or "about:blank"
    title = field("title") or fallback_title
    detail = field("detail")
    if detail is None:
        detail = fallback_detail if field("type") is None else ""
    error_class = StaleLeaseError if _is_stale_lease(problem_type) else SchedulerApiError
    return error_class(status, problem_type, title, detail, problem)


def error_from_body(status: int, reason: str, body: bytes) -> SchedulerApiError:
    """Reads a failed answer's problem details; tolerates a body that is not one."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    problem: Mapping[str, Any] = parsed if isinstance(parsed, dict) else {}
    return error_from_problem(status, problem, reason or "error", text[:_MAX_FALLBACK_DETAIL])


def is_transient(error: BaseException) -> bool:
    """Worth asking again: the network, a timeout, or a server that is overloaded or failing (408, 429, 5xx)."""
    if isinstance(error, TransportError):
        return True
    if isinstance(error, SchedulerApiError):
        return error.status >= 500 or error.status in (408, 429)
    return False
