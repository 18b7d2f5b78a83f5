"""Fixtures for tests across hosts: a test network of namespaces and its PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.multihost._netns import HostNetwork, host_network, unavailable


@pytest.fixture
def network() -> Iterator[HostNetwork]:
    reason = unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI requires the multi-host tests", pytrace=False)
        pytest.skip(reason)
    with host_network(hosts=2) as built:
        yield built
