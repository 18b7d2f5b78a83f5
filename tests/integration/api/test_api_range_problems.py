"""GET /api/assets/{id}/original and /motion with a Range header they cannot serve, over
a real server: a problem like every other error (400 ``invalid_range``, 416
``range_not_satisfiable`` with ``Content-Range: bytes */SIZE``), not Starlette's
text/plain; valid ranges are served as before (tests/integration/api/test_range_requests)."""

from __future__ import annotations

import pytest

from photo_pipeline.api.problems import PROBLEM_JSON
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest import scan  # noqa: F401  (its job type)
from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.factories import photos, videos
from tests.support.api_server import running_server

# Starlette's parser (whole files) refuses these as malformed; the Motion Photo window
# serves the whole clip for text it does not read as a range (RFC 9110 lets a server
# ignore one), so only a last byte before the first is malformed for both.
MALFORMED_FOR_FILES = ["bytes=abc", "bytes=5-2", "items=0-1", "bytes"]
MALFORMED_FOR_BOTH = ["bytes=5-2", "bytes=100-0"]
UNSATISFIABLE = ["bytes=99999999999999999999999-", "bytes={size}-", "bytes=-0"]


@pytest.fixture
def served(db_url, tmp_path):
    """A server whose library holds a JPEG (served as a file) and a Motion Photo (whose
    clip is served as a window of the file): ``(api, {name: (url, size)})``."""
    root = tmp_path / "photos"
    photo = photos.jpeg(root / "IMG_0001.jpg")
    _, _, clip_length = videos.motion_photo(
        root / "PXL_20230801_120000000.MP.jpg", seed=2, taken="2023:08:01 12:00:00"
    )
    with running_server(db_url, tmp_path / "home") as api:
        lib = api.library
        import_folders(lib.service, lib.catalog, [root])
        assert Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True)).run() == 0
        with api.client() as http:
            assets = http.get("/api/assets").json()["assets"]
        still = next(a for a in assets if not a["live"])
        motion = next(a for a in assets if a["live"])
        yield (
            api,
            {
                "file": (still["original_url"], photo.stat().st_size),
                "window": (motion["motion_url"], clip_length),
            },
        )


def _problem(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    body = answer.json()
    assert body["code"] == code and body["status"] == status
    return body


@pytest.mark.parametrize(
    ("what", "range_"),
    [("file", r) for r in MALFORMED_FOR_FILES] + [("window", r) for r in MALFORMED_FOR_BOTH],
)
def test_a_malformed_range_is_a_400_problem(served, what, range_):
    api, urls = served
    url, _ = urls[what]
    with api.client() as http:
        answer = http.get(url, headers={"Range": range_})
    body = _problem(answer, 400, "invalid_range")
    assert repr(range_) in body["detail"]


@pytest.mark.parametrize("what", ["file", "window"])
@pytest.mark.parametrize("range_", UNSATISFIABLE)
def test_an_unsatisfiable_range_is_a_416_problem_with_the_size(served, what, range_):
    api, urls = served
    url, size = urls[what]
    with api.client() as http:
        answer = http.get(url, headers={"Range": range_.format(size=size)})
    body = _problem(answer, 416, "range_not_satisfiable")
    assert answer.headers["content-range"] == f"bytes */{size}"
    assert body["size"] == size


@pytest.mark.parametrize("what", ["file", "window"])
def test_valid_ranges_are_still_served(served, what):
    api, urls = served
    url, size = urls[what]
    with api.client() as http:
        whole = http.get(url).content
        first = http.get(url, headers={"Range": "bytes=0-9"})
        last = http.get(url, headers={"Range": "bytes=-5"})
        clamped = http.get(url, headers={"Range": f"bytes=2-{size * 10}"})
    assert len(whole) == size
    assert (first.status_code, first.content) == (206, whole[:10])
    assert first.headers["content-range"] == f"bytes 0-9/{size}"
    assert (last.status_code, last.content) == (206, whole[-5:])
    assert (clamped.status_code, clamped.content) == (206, whole[2:])
    assert clamped.headers["content-range"] == f"bytes 2-{size - 1}/{size}"
