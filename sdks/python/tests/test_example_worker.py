"""examples/python-worker/worker.py as a process of its own: runs to succeeded, then SIGTERM, exit code 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import chronicle_worker
from chronicle_server import REPO_ROOT, Team, wait_for

EXAMPLE = REPO_ROOT / "examples" / "python-worker" / "worker.py"


def test_the_example_worker_runs_every_enqueued_run_and_stops_on_sigterm(team: Team) -> None:
    job = team.define_job("greet", retry={"maxAttempts": 1, "baseSeconds": 0, "maxSeconds": 0})
    payloads = [{"greet": f"hello {n}"} for n in range(3)]
    run_ids = [team.enqueue(job, payload) for payload in payloads]
    failing = team.enqueue(job, {"fail": "no such customer"})
    # The same SDK these tests import, installed or not.
    sdk_path = str(Path(chronicle_worker.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [sdk_path, os.environ.get("PYTHONPATH")])),
        "SCHEDULER_URL": team.url,
        "SCHEDULER_TOKEN": team.worker_token,
        "QUEUE": team.queue,
        "WAIT_SECONDS": "5",
    }
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE)], cwd=EXAMPLE.parent, env=env, stdout=stdout, stderr=stderr
        )

        def output() -> str:
            stdout.seek(0), stderr.seek(0)
            return f"stdout:\n{stdout.read().decode()}\nstderr:\n{stderr.read().decode()}"

        try:
            wait_for(
                lambda: process.poll() is None
                and all(team.state(run_id) == "succeeded" for run_id in run_ids)
                and team.state(failing) == "dead",
                "every run ended",
                timeout=30,
            )
            process.send_signal(signal.SIGTERM)
            exit_code = process.wait(timeout=15)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        printed = output()

    assert exit_code == 0, printed
    stdout_lines = [json.loads(line) for line in printed.split("\nstderr:\n")[0].splitlines()[1:] if line]
    assert sorted(line["runId"] for line in stdout_lines) == sorted(run_ids + [failing])
    for run_id, payload in zip(run_ids, payloads):
        line = next(line for line in stdout_lines if line["runId"] == run_id)
        assert line["payload"] == payload and line["attempt"] == 1
        assert line["idempotencyKey"] == team.run(run_id)["idempotencyKey"]
    assert team.run(failing)["lastError"] == "no such customer"
    assert "SIGTERM received" in printed and "worker stopped" in printed
