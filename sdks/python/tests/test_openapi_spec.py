"""The SDK's wire calls against the server's OpenAPI document (GET /docs-json).

Every request the SDK sends in a worker's life (a Worker with every option,
and each client call) is recorded and checked: its path and method are an
operation of the document, and each field of its body, at any depth, is a
field of the operation's request schema, of the schema's type. The fields the
SDK reads from answers are checked against the answers' schemas.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from chronicle_server import Api, Server, Team, wait_for

from chronicle_worker import Abort, Completed, Extended, LeasedRun, RunContext, SchedulerClient, Worker

Sent = tuple[str, dict[str, Any]]


class RecordingClient(SchedulerClient):
    """A SchedulerClient that keeps each request it sends (the real call still goes to the server)."""

    def __init__(self, base_url: str, token: str) -> None:
        super().__init__(base_url, token)
        self.sent: list[Sent] = []

    def _post(self, path: str, body: Mapping[str, Any], timeout: float, abort: Abort | None) -> dict[str, Any]:
        self.sent.append((path, dict(body)))
        return super()._post(path, body, timeout, abort)


@pytest.fixture(scope="module")
def document(server: Server) -> dict[str, Any]:
    return dict(Api(server.url).expect("GET", "/docs-json"))


def resolve(document: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema with its ``$ref`` (and a lone ``allOf``) followed."""
    while True:
        if "$ref" in schema:
            schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        elif "allOf" in schema and len(schema["allOf"]) == 1 and "properties" not in schema:
            schema = schema["allOf"][0]
        else:
            return schema


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def mismatches(document: Mapping[str, Any], schema: Mapping[str, Any], value: Any, where: str) -> list[str]:
    """What in ``value`` the schema does not have: unknown fields, wrong types, values off an enum."""
    schema = resolve(document, schema)
    expected = schema.get("type")
    if expected is not None:
        if expected in ("integer", "number") and isinstance(value, bool):
            return [f"{where}: a boolean where the document has {expected}"]
        if not isinstance(value, JSON_TYPES[expected]):
            return [f"{where}: {type(value).__name__} where the document has {expected}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    problems: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name, field_value in value.items():
            if name not in properties:
                problems.append(f"{where}.{name}: not a field of the document's schema")
            else:
                problems += mismatches(document, properties[name], field_value, f"{where}.{name}")
        problems += [f"{where}.{name}: required, not sent" for name in schema.get("required", []) if name not in value]
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += mismatches(document, schema["items"], item, f"{where}[{index}]")
    return problems


def operation_for(document: Mapping[str, Any], path: str) -> tuple[str, Mapping[str, Any]] | None:
    """The document's POST operation whose path template matches ``path``, with the template."""
    for template, item in document["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and "post" in item:
            return template, item["post"]
    return None


def record_a_workers_life(team: Team) -> list[Sent]:
    """A Worker with every option on, through leases, heartbeats and batched completions, then each client call."""
    job = team.define_job("spec", retry={"maxAttempts": 2, "baseSeconds": 0, "maxSeconds": 0}, timeoutSeconds=60)
    run_ids = [team.enqueue(job, {"n": n}) for n in range(4)]
    client = RecordingClient(team.url, team.worker_token)

    def handler(run: LeasedRun, context: RunContext) -> None:
        context.heartbeat()
        context.cancelled.wait(1.5)  # past the heartbeat interval (a third of the 2 s lease): automatic ones go too
        if run.payload["n"] == 0 and context.attempt == 1:
            raise ValueError("failed once")

    worker = Worker(
        client, [team.queue], handler, concurrency=2, lease_seconds=2, wait_seconds=1, worker_id="spec", prefetch_ms=500
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_for(lambda: all(team.state(run_id) == "succeeded" for run_id in run_ids), "every run succeeded", 30)
    finally:
        worker.stop()
        thread.join(15)

    run_id = team.enqueue(job, {"n": 9})
    [run] = client.lease({"queues": [team.queue], "max": 1, "leaseSeconds": 30, "waitSeconds": 5, "workerId": "spec"})
    client.heartbeat(run.run_id, run.fencing_token, 30)
    client.complete(run.run_id, {"fencingToken": run.fencing_token, "outcome": "failure", "error": "x", "retryable": True})
    assert team.state(run_id) in ("retry_wait", "ready", "leased")
    return client.sent


def test_every_request_the_sdk_sends_is_an_operation_of_the_document(team: Team, document: dict[str, Any]) -> None:
    sent = record_a_workers_life(team)
    templates = set()
    problems: list[str] = []
    for path, body in sent:
        found = operation_for(document, path)
        if found is None:
            problems.append(f"POST {path}: not in the document")
            continue
        template, operation = found
        templates.add(template)
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        problems += mismatches(document, schema, body, f"POST {template} body")
    assert problems == []
    # Every call of the protocol was made, so every one was checked.
    assert templates == {
        "/v1/lease",
        "/v1/runs/{id}/heartbeat",
        "/v1/runs/{id}/complete",
        "/v1/runs:heartbeat",
        "/v1/runs:complete",
    }
    sent_fields = {name for path, body in sent if path == "/v1/lease" for name in body}
    assert sent_fields == {"queues", "max", "waitSeconds", "leaseSeconds", "workerId", "prefetchMs"}
    assert any("lease" in body for path, body in sent if path == "/v1/runs:complete")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@pytest.mark.parametrize(
    ("parsed", "schema"),
    [(LeasedRun, "LeasedRun"), (Completed, "CompletionResult"), (Extended, "HeartbeatResult")],
)
def test_every_field_the_sdk_reads_from_an_answer_is_in_the_document(
    parsed: type, schema: str, document: dict[str, Any]
) -> None:
    properties = document["components"]["schemas"][schema]["properties"]
    assert [camel(field.name) for field in dataclasses.fields(parsed) if camel(field.name) not in properties] == []
