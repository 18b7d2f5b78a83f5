"""POST /api/jobs with a path that is not Unicode text (a JSON "\\udc80": a lone
surrogate: 422 ``invalid_path``) or that resolves to a folder whose name is not UTF-8
(422 ``path_not_utf8``), over a real server: never a 500 from rendering the detail or
storing the path."""

from __future__ import annotations

import json
import os

import pytest

from photo_pipeline.api.problems import PROBLEM_JSON, problem
from tests.support.api_server import running_server

# Lone surrogates as a client sends them: escapes in the JSON text itself (json.dumps
# would write the same escapes; a raw body shows what goes over the wire).
LONE_SURROGATES = [
    pytest.param("{allowed}/\\udc80", id="missing-inside"),
    pytest.param("{allowed}/caf\\udce9", id="existing-latin1-folder"),
    pytest.param("/elsewhere/\\udc80", id="outside-the-roots"),
    pytest.param("{allowed}/\\ud800x", id="high-surrogate"),
]


@pytest.fixture
def api(db_url, tmp_path):
    """A server confined to ``photos/``, which holds a folder named ``caf\\xe9``
    (Latin-1 ``café``, not UTF-8) and a symlink ``latin1`` to it."""
    allowed = tmp_path / "photos"
    allowed.mkdir()
    latin1 = os.fsencode(allowed) + b"/caf\xe9"
    os.mkdir(latin1)
    os.symlink(latin1, os.fsencode(allowed) + b"/latin1")
    with running_server(db_url, tmp_path / "home", allowed_roots=(allowed.resolve(),)) as api:
        yield api, allowed.resolve()


@pytest.mark.parametrize("template", LONE_SURROGATES)
def test_a_lone_surrogate_in_an_import_path_is_a_422_problem(api, template):
    server, allowed = api
    path = template.format(allowed=allowed)
    body = '{"type": "import", "params": {"paths": ["' + path + '"]}}'
    with server.client() as http:
        answer = http.post("/api/jobs", content=body, headers={"Content-Type": "application/json"})
        jobs = http.get("/api/jobs").json()["jobs"]
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    refused = answer.json()
    assert refused["code"] == "invalid_path"
    assert refused["detail"].startswith("params.paths[0]: must be Unicode text")
    assert path.rsplit("/", 1)[1] in refused["detail"]  # echoed, escaped
    assert jobs == []


@pytest.mark.parametrize(
    ("job", "below"),
    [("import", ""), ("organize", ""), ("organize", "/sorted")],
    ids=["import", "organize", "organize-below"],
)
def test_a_path_resolving_to_a_folder_not_named_in_utf8_is_a_422_problem(api, job, below):
    """The request's text is UTF-8; its real path (through a symlink) is not, and a job
    stores its paths as text: refused, not a 500 from the database or the answer."""
    server, allowed = api
    path = f"{allowed}/latin1{below}"
    params = {"paths": [path]} if job == "import" else {"dest": path}
    with server.client() as http:
        answer = http.post("/api/jobs", json={"type": job, "params": params})
        jobs = http.get("/api/jobs").json()["jobs"]
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    refused = answer.json()
    assert refused["code"] == "path_not_utf8"
    assert "caf\\xe9" in refused["detail"]  # the byte as it is on disk
    assert jobs == []


def test_a_problem_detail_with_a_lone_surrogate_still_renders():
    answer = problem(422, "invalid_path", "got '/x/\udc80'", paths=["/x/\ud800"])
    sent = json.loads(bytes(answer.body).decode("utf-8"))
    assert sent["detail"] == "got '/x/\\x80'"  # the byte it stands for, as names show
    assert sent["paths"] == ["/x/\\ud800"]  # no byte: the code point
