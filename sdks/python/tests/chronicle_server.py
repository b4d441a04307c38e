"""A real Chronicle server for the tests, and what a team does over REST to give a worker runs.

The server comes from the environment (``CHRONICLE_URL`` and
``CHRONICLE_ADMIN_TOKEN``, as e2e/python-sdk.e2e-spec.ts passes them), or is
started here: the repository's built server (``dist/apps/server/src/main.js``,
``npm run build`` first) on a fresh database of the PostgreSQL at
``CHRONICLE_TEST_PG_URL`` (default ``postgres://postgres@127.0.0.1:5432/postgres``),
dropped afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
SERVER_MAIN = REPO_ROOT / "dist" / "apps" / "server" / "src" / "main.js"
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"

# Run with the repository's pg package: the tests need no PostgreSQL driver of their own.
_DATABASE_SCRIPT = """
const { Client } = require('pg');
const [url, statement] = process.argv.slice(1);
(async () => { const c = new Client(url); await c.connect(); await c.query(statement); await c.end(); })()
  .catch((error) => { console.error(String(error)); process.exit(1); });
"""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0, interval: float = 0.05) -> None:
    """Polls ``condition`` until it holds; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(interval)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


class Api:
    """The REST API as a team's curl would call it: JSON in, JSON (or problem+json) out."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None, extra_headers: dict[str, str] | None = None) -> Answer:
        headers = {"Accept": "application/json, application/problem+json", **(extra_headers or {})}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        return Answer(status, json.loads(text) if text else None)

    def expect(
        self, method: str, path: str, body: Any = None, status: int = 200, headers: dict[str, str] | None = None
    ) -> Any:
        answer = self.call(method, path, body, headers)
        assert answer.status == status, f"{method} {path}: {answer.status} {answer.body}"
        return answer.body


@dataclass(frozen=True)
class Team:
    """A team with a queue of its own, its team token (REST) and a worker token for the queue."""

    url: str
    queue: str
    api: Api
    worker_token: str

    def define_job(self, name: str, **definition: Any) -> str:
        """Defines ``<queue>.<name>`` on the team's queue; returns the job's full name."""
        job = f"{self.queue}.{name}"
        self.api.expect("PUT", f"/v1/jobs/{job}", {"queue": self.queue, **definition}, status=201)
        return job

    def enqueue(self, job: str, payload: Any = None, headers: dict[str, str] | None = None) -> str:
        """Enqueues a run of ``job`` now (with ``headers``, a caller's ``traceparent`` say); its id."""
        body = {} if payload is None else {"payload": payload}
        return str(self.api.expect("POST", f"/v1/jobs/{job}/runs", body, status=201, headers=headers)["runId"])

    def run(self, run_id: str) -> dict[str, Any]:
        return dict(self.api.expect("GET", f"/v1/runs/{run_id}"))

    def state(self, run_id: str) -> str:
        return str(self.run(run_id)["state"])

    def event_types(self, run_id: str) -> list[str]:
        return [event["type"] for event in self.api.expect("GET", f"/v1/runs/{run_id}/events")["events"]]


@dataclass(frozen=True)
class Server:
    url: str
    admin_token: str

    def new_team(self) -> Team:
        """As an operator would: the admin creates a team and issues its team and worker tokens."""
        name = f"py{secrets.token_hex(4)}"
        admin = Api(self.url, self.admin_token)
        admin.expect("POST", "/v1/teams", {"id": name}, status=201)
        queue = f"{name}-q"
        team_token = admin.expect("POST", f"/v1/teams/{name}/tokens", {"kind": "team", "queues": [queue]}, 201)
        worker_token = admin.expect("POST", f"/v1/teams/{name}/tokens", {"kind": "worker", "queues": [queue]}, 201)
        return Team(self.url, queue, Api(self.url, team_token["token"]), worker_token["token"])


@contextmanager
def chronicle_server() -> Iterator[Server]:
    """The server the environment names, or one started here for the session."""
    url, admin_token = os.environ.get("CHRONICLE_URL"), os.environ.get("CHRONICLE_ADMIN_TOKEN")
    if url and admin_token:
        yield Server(url, admin_token)
        return
    with _started_server() as server:
        yield server


def _node() -> str:
    node = os.environ.get("NODE") or shutil.which("node")
    if node is None:
        raise RuntimeError("no node on PATH: set CHRONICLE_URL and CHRONICLE_ADMIN_TOKEN, or put Node on PATH")
    return node


def _on_database(pg_url: str, statement: str) -> None:
    subprocess.run([_node(), "-e", _DATABASE_SCRIPT, pg_url, statement], cwd=REPO_ROOT, check=True, timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _started_server() -> Iterator[Server]:
    if not SERVER_MAIN.exists():
        raise RuntimeError(f"{SERVER_MAIN} is missing: run `npm run build` in {REPO_ROOT}")
    pg_url = os.environ.get("CHRONICLE_TEST_PG_URL", DEFAULT_PG_URL)
    database = f"chronicle_pysdk_{secrets.token_hex(4)}"
    _on_database(pg_url, f"CREATE DATABASE {database}")
    admin_token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": pg_url.rsplit("/", 1)[0] + "/" + database,
        "PORT": str(port),
        "SCHEDULER_ADMIN_TOKEN": admin_token,
        "LOG_LEVEL": "warn",
    }
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen([_node(), str(SERVER_MAIN)], cwd=REPO_ROOT, env=env, stdout=output, stderr=output)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, process, output)
            yield Server(url, admin_token)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            _on_database(pg_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _wait_healthy(url: str, process: subprocess.Popen[bytes], output: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output.seek(0)
            raise RuntimeError(f"the server exited ({process.returncode}): {output.read().decode(errors='replace')}")
        try:
            if Api(url).call("GET", "/healthz").status == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.1)
    output.seek(0)
    raise RuntimeError(f"no healthy answer from {url} within {timeout} s: {output.read().decode(errors='replace')}")

