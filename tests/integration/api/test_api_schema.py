"""Schemathesis against the running server's own OpenAPI schema: generated requests
(valid and invalid) never get a 5xx or an answer that breaks the schema."""

from __future__ import annotations

import tempfile
from dataclasses import replace

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig

from photo_pipeline.api import create_app
from photo_pipeline.config import Settings
from photo_pipeline.pipeline.library import open_library
from tests.conftest import make_database_url
from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.api_server import TOKEN, running_server


@pytest.fixture(scope="module")
def live_api(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schema")
    for url in make_database_url("sqlite", tmp):
        with running_server(url, tmp / "home") as server:
            with server.client() as http:  # some data for the generated requests to find
                body = {
                    "type": "test.record",
                    "params": {"log": str(tmp / "r.log"), "items": ["a"]},
                }
                http.post("/api/jobs", json=body).raise_for_status()
            yield server


def _openapi() -> dict:
    """The schema as the app publishes it (parametrize needs it at collection time)."""
    with tempfile.TemporaryDirectory() as tmp:
        settings_ = replace(Settings.from_env({"PHOTO_PIPELINE_HOME": tmp}), api_token=TOKEN)
        lib = open_library(settings_)
        try:
            return create_app(lib).openapi()
        finally:
            lib.close()


# Negative data may also be refused for its size (413: e.g. a list over maxItems whose
# items are long) or a body that stops arriving (408).
_REFUSALS = [400, 401, 403, 404, 405, 406, 408, 409, 413, 415, 422, 428, 429]
_CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": _REFUSALS}}}
)
# Streams never end on their own; they are covered by test_api_stream.py.
schema = schemathesis.openapi.from_dict(_openapi(), config=_CONFIG).exclude(path_regex="/stream$")


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_generated_requests_get_no_5xx_and_match_the_schema(case, live_api):
    case.call_and_validate(
        base_url=live_api.base_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        # Schema-valid requests may still be refused on purpose (a folder that does not
        # exist, a job in a state that cannot be cancelled): 4xx problems, checked by
        # status_code_conformance; what must never happen is a 5xx or a bad answer.
        excluded_checks=[positive_data_acceptance],
    )
