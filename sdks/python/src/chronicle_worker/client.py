"""The worker protocol over HTTP: lease, heartbeat, complete (one or many).

Standard library only (``http.client``). One connection per call: a worker
makes a few calls a second at most, and a fresh connection cannot be a
half-closed one left over from a long poll the server gave up on.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union
from urllib.parse import quote, urlsplit

from .errors import (
    CallAbortedError,
    SchedulerApiError,
    TransportError,
    error_from_body,
    error_from_problem,
)
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

#: Longest wait for one answer, in seconds; a lease adds its ``waitSeconds``.
DEFAULT_TIMEOUT = 10.0

#: A run's answer in a batch: its result, or the problem that refused it alone (stale-lease, not-found).
CompletionOutcome = Union[Completed, SchedulerApiError]
HeartbeatOutcome = Union[Extended, SchedulerApiError]


@dataclass(frozen=True)
class CompleteManyResult:
    """The answer to ``POST /v1/runs:complete``: one outcome per completion, in order, and the runs it leased."""

    results: list[CompletionOutcome]
    leases: list[LeasedRun] = field(default_factory=list)


class Abort:
    """Aborts calls in progress from another thread (or a signal handler): a worker's stop ends its long poll.

    A call made after ``abort()`` raises CallAbortedError at once. Aborting
    closes the call's socket, so the server may have acted on the request (a
    lease it granted then runs again when that lease expires).
    """

    def __init__(self) -> None:
        # Reentrant: abort() runs in a signal handler, which may interrupt the main thread holding it.
        self._lock = threading.RLock()
        self._aborted = False
        self._sockets: set[socket.socket] = set()

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the call itself

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            aborted = self._aborted
            if not aborted:
                self._sockets.add(sock)
        if aborted:
            raise CallAbortedError("aborted before it was sent")

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)


class SchedulerClient:
    """The worker protocol: lease, heartbeat, complete.

    Non-2xx answers raise SchedulerApiError (StaleLeaseError for
    ``stale-lease``); no answer raises TransportError. No retries here: the
    Worker decides what to retry (``is_transient``). Thread-safe: every call
    has its own connection.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path
        self._token = token
        self._timeout = timeout

    def lease(self, request: LeaseRequest, *, abort: Abort | None = None) -> list[LeasedRun]:
        """Leases up to ``max`` runs, long-polling up to ``waitSeconds``; the list may be empty."""
        # A long poll legitimately holds the answer back for waitSeconds.
        timeout = self._timeout + request.get("waitSeconds", 0)
        answer = self._post("/v1/lease", request, timeout, abort)
        return [LeasedRun.from_json(run) for run in answer["leases"]]

    def heartbeat(
        self, run_id: str, fencing_token: int, lease_seconds: int | None = None, *, abort: Abort | None = None
    ) -> Extended:
        """Extends the lease; StaleLeaseError when the token is no longer the run's current one."""
        body: dict[str, Any] = {"fencingToken": fencing_token}
        if lease_seconds is not None:
            body["leaseSeconds"] = lease_seconds
        answer = self._post(f"/v1/runs/{quote(run_id, safe='')}/heartbeat", body, self._timeout, abort)
        return Extended.from_json(run_id, answer)

    def complete(self, run_id: str, request: CompleteRequest, *, abort: Abort | None = None) -> Completed:
        """Reports the outcome; StaleLeaseError when the run is no longer ours (the result is then dropped)."""
        answer = self._post(f"/v1/runs/{quote(run_id, safe='')}/complete", request, self._timeout, abort)
        return Completed.from_json({"runId": run_id, **answer})

    def heartbeat_many(self, heartbeats: Sequence[Heartbeat], *, abort: Abort | None = None) -> list[HeartbeatOutcome]:
        """Up to 100 heartbeats in one transaction; each run's new expiry, or its own problem, in order."""
        answer = self._post("/v1/runs:heartbeat", {"heartbeats": list(heartbeats)}, self._timeout, abort)
        return [
            _refusal(result) if "problem" in result else Extended.from_json(str(result["runId"]), result)
            for result in answer["results"]
        ]

    def complete_many(
        self,
        completions: Sequence[Completion],
        lease: LeaseNextRequest | None = None,
        *,
        abort: Abort | None = None,
    ) -> CompleteManyResult:
        """Up to 100 outcomes in one transaction; with ``lease``, the same transaction leases the next runs."""
        body: dict[str, Any] = {"completions": list(completions)}
        if lease is not None:
            body["lease"] = lease
        answer = self._post("/v1/runs:complete", body, self._timeout, abort)
        return CompleteManyResult(
            results=[
                _refusal(result) if "problem" in result else Completed.from_json(result)
                for result in answer["results"]
            ],
            leases=[LeasedRun.from_json(run) for run in answer.get("leases", [])],
        )

    def _post(self, path: str, body: Mapping[str, Any], timeout: float, abort: Abort | None) -> dict[str, Any]:
        """Sends one JSON POST; the answer's JSON object, or the exception for its problem."""
        connection_class = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        connection = connection_class(self._host, self._port, timeout=timeout)
        payload = json.dumps(body, separators=(",", ":")).encode()
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Content-Type": "application/json",
            "Accept": "application/json, application/problem+json",
        }
        tracked: socket.socket | None = None
        try:
            connection.connect()
            if abort is not None and connection.sock is not None:
                tracked = connection.sock
                abort._track(tracked)
            connection.request("POST", self._prefix + path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except CallAbortedError:
            raise
        except (OSError, http.client.HTTPException) as error:
            if abort is not None and abort.aborted:
                raise CallAbortedError(f"POST {path} aborted") from error
            raise TransportError(f"POST {path}: {error or type(error).__name__}") from error
        finally:
            if tracked is not None and abort is not None:
                abort._untrack(tracked)
            connection.close()
        if not 200 <= response.status < 300:
            raise error_from_body(response.status, response.reason, data)
        answer = json.loads(data)
        if not isinstance(answer, dict):
            raise TransportError(f"POST {path}: the answer is not a JSON object")
        return answer


def _refusal(result: Mapping[str, Any]) -> SchedulerApiError:
    problem = result["problem"]
    return error_from_problem(int(problem.get("status", 409)), problem)
