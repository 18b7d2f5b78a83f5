"""tus uploads through a real server (uvicorn on loopback) with tuspy as the client:
interrupted and resumed uploads, the SHA-256 pre-check, expiry of partials, the
per-file and per-day limits, a really full disk (a small tmpfs), hostile file names,
authentication, and bad requests answered with problems, never a 500."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from tusclient import client as tus_client
from tusclient.storage.filestorage import FileStorage

from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.pipeline.uploads.service import SweepReport, Uploads
from photo_pipeline.pipeline.uploads.settings import UploadSettings
from tests.factories.photos import jpeg
from tests.support.api_server import TOKEN, ApiServer, running_server
from tests.support.cli_processes import wait_until

# tuspy opens the file it uploads (and its URL store) and never closes them: their
# ResourceWarnings surface as unraisable-exception warnings, which are no failure here.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

TUS = {"Tus-Resumable": "1.0.0"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def uploads_root(tmp_path: Path) -> Path:
    return tmp_path / "allowed" / "uploads"


def _server(db_url: str, tmp_path: Path, root: Path, **limits: object):
    settings = UploadSettings(root=root, sweep_seconds=3600, reserve_bytes=0, **limits)  # type: ignore[arg-type]
    return running_server(
        db_url,
        tmp_path / "home",
        upload_settings=settings,
        allowed_roots=(root.parent.resolve(),),
    )


@pytest.fixture
def server(db_url: str, tmp_path: Path, uploads_root: Path) -> Iterator[ApiServer]:
    uploads_root.parent.mkdir(parents=True)
    with _server(db_url, tmp_path, uploads_root) as running:
        yield running


def _service(server: ApiServer) -> Uploads:
    assert server.app is not None
    uploads: Uploads = server.app.state.uploads
    return uploads


def _tus(server: ApiServer) -> tus_client.TusClient:
    return tus_client.TusClient(server.base_url + "/api/uploads", headers=AUTH)


def _metadata(name: str, mtime: datetime, device: str = "Anna's phone") -> dict[str, str]:
    return {
        "filename": name,
        "lastModified": str(int(mtime.timestamp() * 1000)),
        "device": device,
        "filetype": "image/jpeg",
    }


def _photo(folder: Path, name: str, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return jpeg(folder / name, size=(900, 700), seed=seed)


@contextmanager
def _patch_cut_off(server: ApiServer, location: str, declared: int) -> Iterator[socket.socket]:
    """A PATCH whose body would have ``declared`` bytes, its socket given to the
    caller to send part of the body; then the connection drops (a phone losing its
    network), without the end of the body."""
    port = int(server.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        head = (
            f"PATCH {location} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nTus-Resumable: 1.0.0\r\n"
            "Content-Type: application/offset+octet-stream\r\n"
            f"Upload-Offset: 0\r\nContent-Length: {declared}\r\n\r\n"
        )
        sock.sendall(head.encode())
        yield sock


def _offset(server: ApiServer, location: str) -> int | None:
    with server.client() as http:
        answer = http.head(location, headers=TUS)
    return int(answer.headers["upload-offset"]) if answer.status_code == 200 else None


def _held(server: ApiServer, location: str) -> bool:
    """Whether no request holds the upload any more (a PATCH at its offset, with
    nothing in its body, is refused with 423 while one does)."""
    with server.client() as http:
        offset = http.head(location, headers=TUS).headers["upload-offset"]
        answer = http.patch(
            location,
            content=b"",
            headers={
                **TUS,
                "Upload-Offset": offset,
                "Content-Type": "application/offset+octet-stream",
            },
        )
    return answer.status_code == 204


def _finished(server: ApiServer) -> bool:
    jobs = server.library.service.list_jobs(limit=100)
    return bool(jobs) and all(job["state"] in FINISHED_STATES for job in jobs)


def test_an_interrupted_upload_resumes_and_lands_with_its_name_and_mtime(
    server: ApiServer, tmp_path: Path, uploads_root: Path
) -> None:
    photo = _photo(tmp_path / "phone", "IMG_0001.JPG", seed=1)
    with photo.open("ab") as grown:  # big enough to be cut off mid-way: 3 MiB more
        grown.write(os.urandom(3 << 20))
    data = photo.read_bytes()
    taken = datetime(2024, 5, 17, 9, 30, 12, tzinfo=UTC)
    storage = FileStorage(str(tmp_path / "tus-urls.json"))
    uploader = _tus(server).uploader(
        str(photo),
        metadata=_metadata("IMG_0001.JPG", taken),
        chunk_size=len(data),
        store_url=True,
        url_storage=storage,
    )
    uploader.set_url(uploader.create_url())
    location = httpx.URL(uploader.url).path
    with _patch_cut_off(server, location, declared=len(data)) as sock:
        sock.sendall(data[: 2 << 20])
        wait_until(lambda: (_offset(server, location) or 0) >= 1 << 20, "the first MiB held")
    # The server keeps what arrived before the connection dropped (fsynced).
    wait_until(lambda: _held(server, location), "the cut-off request to end")
    held = _offset(server, location)
    assert held is not None and 1 << 20 <= held <= 2 << 20
    assert not list(uploads_root.glob("*/*.JPG")), "a partial must never appear in the library"

    # A new client (the app restarted) finds the upload by the file's fingerprint.
    resumed = _tus(server).uploader(
        str(photo),
        metadata=_metadata("IMG_0001.JPG", taken),
        chunk_size=64 << 10,
        store_url=True,
        url_storage=storage,
    )
    assert resumed.url == uploader.url and resumed.offset == held
    resumed.upload()

    landed = uploads_root / "Anna's phone" / "IMG_0001.JPG"  # the device named in the UI
    assert landed.read_bytes() == data
    assert landed.stat().st_mtime_ns == int(taken.timestamp()) * 1_000_000_000
    assert os.listdir(uploads_root / ".pp-uploads") == []
    # A scan of the uploads source was queued for it.
    jobs = server.library.service.list_jobs(limit=10)
    scans = [job for job in jobs if job["job_type"] == "scan"]
    assert [s["params"]["sources"][0]["path"] for s in scans] == [str(uploads_root.resolve())]


def test_the_precheck_answers_by_sha256_once_the_upload_is_catalogued(
    db_url: str, tmp_path: Path, uploads_root: Path
) -> None:
    uploads_root.parent.mkdir(parents=True)
    settings = UploadSettings(root=uploads_root, sweep_seconds=0.05, reserve_bytes=0)
    with running_server(
        db_url,
        tmp_path / "home",
        embedded_workers=1,
        upload_settings=settings,
        allowed_roots=(uploads_root.parent.resolve(),),
    ) as server:
        photos = [_photo(tmp_path / "roll", f"P{n}.jpg", seed=n) for n in range(3)]
        digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in photos]
        with server.client() as http:
            for digest in digests:
                assert http.head("/api/assets", params={"sha256": digest}).status_code == 404
        for photo in photos[:2]:
            _tus(server).uploader(str(photo), metadata={"filename": photo.name}).upload()
        # Both land and get catalogued: the second one's scan may have found the first
        # still running, then the sweep queues another.
        wait_until(
            lambda: _finished(server) and not _service(server).sweep().scans_queued,
            "the uploads to be catalogued",
        )
        with server.client() as http:
            known = [
                http.head("/api/assets", params={"sha256": digest.upper()}).status_code
                for digest in digests
            ]
            assert known == [200, 200, 404]
            page = http.get("/api/assets").json()
        assert page["total"] == 2


def test_an_abandoned_partial_expires_and_is_removed(
    server: ApiServer, tmp_path: Path, uploads_root: Path
) -> None:
    photo = _photo(tmp_path / "phone", "IMG_7.JPG", seed=7)
    abandoned = _tus(server).uploader(str(photo), metadata={"filename": "IMG_7.JPG"})
    abandoned.upload(stop_at=1000)  # then the phone went away
    location = httpx.URL(abandoned.url).path
    done = _photo(tmp_path, "done.jpg", seed=8)
    finished = _tus(server).uploader(str(done), metadata={"filename": done.name})
    finished.upload()
    uploads = _service(server)
    assert uploads.sweep().expired == 0 and _offset(server, location) == 1000

    later = datetime.now(UTC) + uploads.settings.expire_after + timedelta(minutes=1)
    uploads.clock = lambda: later
    assert uploads.sweep().expired == 1
    assert os.listdir(uploads_root / ".pp-uploads") == []
    with server.client() as http:
        assert http.head(location, headers=TUS).status_code == 404
        answer = http.patch(
            location,
            content=b"x",
            headers={
                **TUS,
                "Upload-Offset": "1000",
                "Content-Type": "application/offset+octet-stream",
            },
        )
    assert answer.status_code == 404 and answer.json()["code"] == "upload_not_found"
    assert (uploads_root / "browser" / "done.jpg").is_file()  # a finished one stays


def test_a_whole_upload_the_server_stopped_before_landing_lands_when_asked(
    server: ApiServer, uploads_root: Path
) -> None:
    with server.client() as http:
        location = _create(http, 5, filename="late.jpg").headers["location"]
        # As a server killed after its last fsync and before the landing leaves it.
        (uploads_root / ".pp-uploads" / location.rsplit("/", 1)[1]).write_bytes(b"whole")
        assert not (uploads_root / "browser" / "late.jpg").exists()
        answer = http.head(location, headers=TUS)  # a client asks, and takes it as done
    assert answer.status_code == 200 and answer.headers["upload-offset"] == "5"
    assert "upload-expires" not in answer.headers
    assert (uploads_root / "browser" / "late.jpg").read_bytes() == b"whole"
    assert os.listdir(uploads_root / ".pp-uploads") == []


def _create(http: httpx.Client, length: int, **metadata: str) -> httpx.Response:
    encoded = ",".join(
        f"{key} {base64.b64encode(value.encode()).decode()}" for key, value in metadata.items()
    )
    headers = {**TUS, "Upload-Length": str(length)}
    if encoded:
        headers["Upload-Metadata"] = encoded
    return http.post("/api/uploads", headers=headers)


def test_per_file_and_per_day_limits_answer_413(
    db_url: str, tmp_path: Path, uploads_root: Path
) -> None:
    uploads_root.parent.mkdir(parents=True)
    with (
        _server(db_url, tmp_path, uploads_root, max_file_bytes=2000, max_day_bytes=3000) as server,
        server.client() as http,
    ):
        too_big = _create(http, 2001, filename="big.jpg")
        assert too_big.status_code == 413
        assert too_big.headers["content-type"] == "application/problem+json"
        assert too_big.json()["code"] == "upload_too_large"
        assert _create(http, 1500).status_code == 201
        assert _create(http, 1500).status_code == 201
        over = _create(http, 1)
        assert over.status_code == 413 and over.json()["code"] == "daily_quota_exceeded"
        assert over.json()["left"] == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test: a disk that really fills up."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("mounting a tmpfs needs root; CI runs as root")
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_answers_507_and_the_upload_resumes_once_there_is_room(
    db_url: str, tmp_path: Path, small_disk: Path
) -> None:
    root = small_disk / "uploads"
    with _server(db_url, tmp_path, root) as server, server.client() as http:
        refused = _create(http, 8 << 20, filename="huge.mov")  # more than the disk holds
        assert refused.status_code == 507 and refused.json()["code"] == "disk_full"

        data = os.urandom(3 << 20)
        created = _create(http, len(data), filename="clip.mov")
        assert created.status_code == 201
        location = created.headers["location"]
        filler = small_disk / "filler"
        filler.write_bytes(os.urandom(2 << 20))  # something else fills the disk meanwhile
        patch = {**TUS, "Content-Type": "application/offset+octet-stream"}
        full = http.patch(location, content=data, headers={**patch, "Upload-Offset": "0"})
        assert full.status_code == 507 and full.json()["code"] == "disk_full"
        held = _offset(server, location)
        assert held is not None and 0 <= held < len(data)

        filler.unlink()
        done = http.patch(
            location, content=data[held:], headers={**patch, "Upload-Offset": str(held)}
        )
        assert done.status_code == 204 and done.headers["upload-offset"] == str(len(data))
    assert (root / "browser" / "clip.mov").read_bytes() == data


@pytest.mark.parametrize(
    ("sent", "device", "lands_as"),
    [
        ("../../../etc/evil.jpg", "phone", "phone/evil.jpg"),
        ("/etc/passwd", "phone", "phone/passwd"),
        ("a\\..\\..\\b.jpg", "phone", "phone/b.jpg"),
        ("..", "phone", "phone/upload"),
        (".hidden.jpg", "phone", "phone/hidden.jpg"),
        ("ok\x00name\n.jpg", "phone", "phone/okname.jpg"),
        ("IMG.jpg", "../../outside", "outside/IMG.jpg"),
        ("IMG.jpg", "..", "browser/IMG.jpg"),
        ("IMG.jpg", ".pp-uploads", "pp-uploads/IMG.jpg"),
    ],
)
def test_hostile_names_land_inside_the_device_folder(
    server: ApiServer, tmp_path: Path, uploads_root: Path, sent: str, device: str, lands_as: str
) -> None:
    with server.client() as http:
        created = _create(http, 5, filename=sent, device=device)
        assert created.status_code == 201
        answer = http.patch(
            created.headers["location"],
            content=b"hello",
            headers={
                **TUS,
                "Upload-Offset": "0",
                "Content-Type": "application/offset+octet-stream",
            },
        )
    assert answer.status_code == 204
    landed = [
        str(path.relative_to(uploads_root))
        for path in uploads_root.rglob("*")
        if path.is_file() and ".pp-uploads" not in path.parts
    ]
    assert landed == [lands_as]
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and uploads_root not in p.parents]
    assert not [p for p in outside if p.read_bytes() == b"hello"]


def test_creation_with_upload_takes_the_first_bytes_in_the_same_request(
    server: ApiServer, uploads_root: Path
) -> None:
    data = os.urandom(3 << 20)  # more than a JSON request may have
    first = 2 << 20
    with server.client() as http:
        headers = {
            **TUS,
            "Upload-Length": str(len(data)),
            "Upload-Metadata": "filename " + base64.b64encode(b"two.mov").decode(),
            "Content-Type": "application/offset+octet-stream",
        }
        created = http.post("/api/uploads", content=data[:first], headers=headers)
        assert created.status_code == 201 and created.headers["upload-offset"] == str(first)
        location = created.headers["location"]
        assert not (uploads_root / "browser" / "two.mov").exists()
        rest = http.patch(
            location,
            content=data[first:],
            headers={
                **TUS,
                "Upload-Offset": str(first),
                "Content-Type": "application/offset+octet-stream",
            },
        )
        assert rest.status_code == 204
        whole = http.post("/api/uploads", content=data, headers=headers)
        assert whole.headers["upload-offset"] == str(len(data))
        assert "upload-expires" not in whole.headers
        too_much = http.post("/api/uploads", content=data + b"X", headers=headers)
        assert too_much.status_code == 413 and too_much.json()["code"] == "exceeds_upload_length"
        assert too_much.headers["location"].startswith("/api/uploads/")
    assert (uploads_root / "browser" / "two.mov").read_bytes() == data
    assert (uploads_root / "browser" / "two (2).mov").read_bytes() == data


def test_a_name_that_is_taken_gets_a_suffix(server: ApiServer, uploads_root: Path) -> None:
    with server.client() as http:
        for content in (b"one", b"two", b"six"):
            location = _create(http, 3, filename="IMG.jpg", device="cam").headers["location"]
            http.patch(
                location,
                content=content,
                headers={
                    **TUS,
                    "Upload-Offset": "0",
                    "Content-Type": "application/offset+octet-stream",
                },
            ).raise_for_status()
    folder = uploads_root / "cam"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {
        "IMG.jpg": b"one",
        "IMG (2).jpg": b"two",
        "IMG (3).jpg": b"six",
    }


def test_every_upload_route_needs_the_token(server: ApiServer) -> None:
    with server.client() as http:
        location = _create(http, 10).headers["location"]
    with server.client(token=None) as anonymous:
        answers = [
            anonymous.post("/api/uploads", headers={**TUS, "Upload-Length": "10"}),
            anonymous.head(location, headers=TUS),
            anonymous.patch(
                location,
                content=b"0123456789",
                headers={
                    **TUS,
                    "Upload-Offset": "0",
                    "Content-Type": "application/offset+octet-stream",
                },
            ),
            anonymous.delete(location, headers=TUS),
            anonymous.head("/api/assets", params={"sha256": "0" * 64}),
        ]
    assert [a.status_code for a in answers] == [401] * 5
    assert answers[0].json()["code"] == "unauthorized"
    assert _offset(server, location) == 0


def test_bad_requests_get_problems_never_a_500(server: ApiServer) -> None:
    patch = {**TUS, "Content-Type": "application/offset+octet-stream"}
    with server.client() as http:
        location = _create(http, 4).headers["location"]
        cases = {
            "no version": (http.post("/api/uploads", headers={"Upload-Length": "1"}), 412),
            "length not a number": (
                http.post("/api/uploads", headers={**TUS, "Upload-Length": "-1"}),
                400,
            ),
            "no length": (http.post("/api/uploads", headers=TUS), 400),
            "metadata not base64": (
                http.post(
                    "/api/uploads",
                    headers={**TUS, "Upload-Length": "1", "Upload-Metadata": "filename %%%"},
                ),
                400,
            ),
            "bad id": (http.head("/api/uploads/..%2F..%2Fetc", headers=TUS), 404),
            "unknown id": (http.head("/api/uploads/" + "0" * 32, headers=TUS), 404),
            "wrong type": (
                http.patch(location, content=b"ab", headers={**TUS, "Upload-Offset": "0"}),
                415,
            ),
            "offset mismatch": (
                http.patch(location, content=b"ab", headers={**patch, "Upload-Offset": "2"}),
                409,
            ),
            "past the length": (
                http.patch(location, content=b"abcdef", headers={**patch, "Upload-Offset": "0"}),
                413,
            ),
            "bad sha256": (http.head("/api/assets", params={"sha256": "xyz"}), 422),
        }
        got = {name: answer.status_code for name, (answer, _) in cases.items()}
        assert got == {name: status for name, (_, status) in cases.items()}
        assert cases["no version"][0].headers["tus-version"] == "1.0.0"
        for name, (answer, _) in cases.items():
            if answer.request.method != "HEAD":
                assert answer.headers["content-type"] == "application/problem+json", name
        # Termination removes an unfinished upload.
        assert http.delete(location, headers=TUS).status_code == 204
        assert http.head(location, headers=TUS).status_code == 404
        options = http.options("/api/uploads")
    assert options.status_code == 204
    assert options.headers["tus-extension"] == (
        "creation,creation-with-upload,termination,expiration"
    )


def test_uploads_outside_the_allowed_roots_are_refused(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "allowed").mkdir()
    settings = UploadSettings(root=tmp_path / "elsewhere", reserve_bytes=0)
    with (
        running_server(
            db_url,
            tmp_path / "home",
            upload_settings=settings,
            allowed_roots=((tmp_path / "allowed").resolve(),),
        ) as server,
        server.client() as http,
    ):
        answer = _create(http, 10)
    assert answer.status_code == 403 and answer.json()["code"] == "path_outside_roots"
    assert not (tmp_path / "elsewhere").exists()


def test_a_sweep_before_any_upload_makes_no_folder(server: ApiServer, uploads_root: Path) -> None:
    assert _service(server).sweep() == SweepReport()
    assert not uploads_root.exists()


def test_default_uploads_folder_is_in_the_first_allowed_root(tmp_path: Path) -> None:
    from photo_pipeline.config import Settings

    base = Settings.from_env({"PHOTO_PIPELINE_HOME": str(tmp_path / "home")})
    inside = replace(base, allowed_roots=(tmp_path / "photos",))
    assert UploadSettings.from_env(inside, {}).root == (tmp_path / "photos" / "uploads").resolve()
    beside = UploadSettings.from_env(base, {}).root
    assert beside == (tmp_path / "home-uploads").resolve()
