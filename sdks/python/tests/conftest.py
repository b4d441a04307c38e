"""Fixtures: one real server for the session (see chronicle_server.py), a fresh team for each test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from chronicle_server import Server, Team, chronicle_server


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with chronicle_server() as running:
        yield running


@pytest.fixture
def team(server: Server) -> Team:
    return server.new_team()


@pytest.fixture(autouse=True)
def worker_logs(caplog: pytest.LogCaptureFixture) -> None:
    """The SDK's log lines, shown with a failing test's output."""
    caplog.set_level(logging.INFO, logger="chronicle_worker")
