"""An example worker, as a team's own repository would have it: the Python SDK installed with pip.

  SCHEDULER_URL    the scheduler's base URL, e.g. http://localhost:3000
  SCHEDULER_TOKEN  a worker token for QUEUE
  QUEUE            the queue(s) to work, comma-separated
  CONCURRENCY      runs at once (default 4)
  WAIT_SECONDS     long-poll length of a lease call, 0..30 (default 20)
  EXIT_AFTER       stop after this many runs (default: run until SIGTERM/SIGINT)

Each run is logged to stdout as one JSON line and completed as a success;
a payload with "fail": "..." fails it without retries (NonRetryableError).
The worker's own messages go to stderr, one JSON object a line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from chronicle_worker import LeasedRun, NonRetryableError, RunContext, SchedulerClient, Worker


class JsonLines(logging.Formatter):
    """One JSON object a line: level, message, and the fields the SDK passes as ``extra``."""

    STANDARD = set(vars(logging.makeLogRecord({}))) | {"message"}

    def format(self, record: logging.LogRecord) -> str:
        fields = {key: value for key, value in vars(record).items() if key not in self.STANDARD}
        return json.dumps({"level": record.levelname.lower(), "message": record.getMessage(), **fields}, default=str)


def required_env(name: str) -> str:
    value = os.environ.get(name, "")
    if value == "":
        print(f"{name} is not set (see the docstring at the top of worker.py)", file=sys.stderr)
        sys.exit(2)
    return value


def main() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    log = logging.getLogger("example-worker")

    exit_after = int(os.environ["EXIT_AFTER"]) if os.environ.get("EXIT_AFTER") else None
    handled = 0
    counting = threading.Lock()
    printing = threading.Lock()

    def handle(run: LeasedRun, context: RunContext) -> None:
        nonlocal handled
        line: dict[str, Any] = {
            "runId": run.run_id,
            "job": run.job,
            "attempt": context.attempt,
            "idempotencyKey": context.idempotency_key,
            "payload": run.payload,
        }
        # Handlers run on threads of their own: one line at a time, or two runs' lines could interleave.
        with printing:
            print(json.dumps(line), flush=True)
        if isinstance(run.payload, dict) and isinstance(run.payload.get("fail"), str):
            raise NonRetryableError(run.payload["fail"])
        with counting:
            handled += 1
            if exit_after is not None and handled >= exit_after:
                worker.stop()

    queues = required_env("QUEUE").split(",")
    worker = Worker(
        SchedulerClient(required_env("SCHEDULER_URL"), required_env("SCHEDULER_TOKEN")),
        queues,
        handle,
        concurrency=int(os.environ.get("CONCURRENCY", "4")),
        wait_seconds=int(os.environ.get("WAIT_SECONDS", "20")),
        worker_id=f"example-python-worker-{os.getpid()}",
    )
    # SIGTERM or SIGINT: stop leasing, let the runs in flight finish, then run() returns.
    worker.stop_on_signals(grace_seconds=10)
    log.info("worker started", extra={"queues": queues, "pid": os.getpid()})
    worker.run()
    log.info("worker stopped", extra={"handled": handled})


if __name__ == "__main__":
    main()
