"""Benchmark uploads: 100 photos over loopback through tus against ``curl``-ing the
same bytes.

Run with ``.venv/bin/python -m bench.upload [--photos 100] [--rounds 5]``. It starts
``photo-pipeline serve`` (no embedded worker: the scans the uploads queue wait, so
only the transfer is measured) on a fresh library and, as the baseline, a bare sink:
uvicorn with a raw ASGI app that streams each PUT body into a file and fsyncs it and
its folder, the least an HTTP upload that lands durably can do. Each round, in mirrored order:

* ``tus (tuspy)``: each photo through ``POST /api/uploads`` then one ``PATCH`` with
  tuspy, as a Python client would;
* ``tus (curl)``: the same protocol with one ``curl`` process for all the PATCHes
  (the uploads created by POSTs from httpx on one connection, timed too): the
  server's cost without the Python client's;
* ``tus (curl, 1 request)``: one ``curl`` process, one POST a photo carrying all its
  bytes (creation-with-upload, as the web UI sends a photo under 16 MiB);
* ``curl → sink``: one ``curl -T`` process PUTting every photo to the bare sink.

Printed: MB/s per case (median of the rounds, min–max) and the ratios of each tus
case to the baseline (target ≥ 0.8). Landed files are removed between rounds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import _harness as h
from bench._photos import write_photos

TOKEN = "bench-token-" + "x7Kp2Qv9" * 4
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TUS = {"Tus-Resumable": "1.0.0"}


# ── the baseline's server: a raw ASGI sink ─────────────────────────────────────
async def sink_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """PUT /<name>: the body streamed into SINK_DIR/<name>, the file and its folder
    fsynced (a new name is durable only then); 201."""
    if scope["type"] != "http":
        return
    folder = os.environ["SINK_DIR"]
    name = os.path.basename(scope["path"]) or "upload"
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            os.write(fd, message.get("body", b""))
            more = message.get("more_body", False)
        os.fsync(fd)
    finally:
        os.close(fd)
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder_fd)
    finally:
        os.close(folder_fd)
    await send({"type": "http.response.start", "status": 201, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server exited")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not start")


def start_serve(home: Path, uploads: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PHOTO_PIPELINE_HOME": str(home),
        "PHOTO_PIPELINE_TOKEN": TOKEN,
        "PHOTO_PIPELINE_UPLOADS_DIR": str(uploads),
    }
    command = [sys.executable, "-m", "photo_pipeline", "serve", "--port", str(port)]
    command += ["--workers-embedded", "0"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    wait_for(f"http://127.0.0.1:{port}/api/health", server)
    return server


def start_sink(folder: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SINK_DIR": str(folder)}
    command = [sys.executable, "-m", "uvicorn", "bench.upload:sink_app", "--port", str(port)]
    command += ["--log-level", "warning", "--no-access-log"]
    sink = subprocess.Popen(
        command, env=env, cwd=h.REPO, stdout=subprocess.DEVNULL, stderr=log.open("w")
    )
    wait_for(f"http://127.0.0.1:{port}/", sink)
    return sink


# ── the cases ──────────────────────────────────────────────────────────────────
def tus_with_tuspy(base: str, photos: list[Path]) -> float:
    from tusclient import client

    tus = client.TusClient(base + "/api/uploads", headers=AUTH)
    started = time.perf_counter()
    for photo in photos:
        with photo.open("rb") as stream:
            tus.uploader(file_stream=stream, metadata={"filename": photo.name}).upload()
    return time.perf_counter() - started


def tus_with_curl(base: str, photos: list[Path], config: Path) -> float:
    started = time.perf_counter()
    lines = []
    with httpx.Client(base_url=base, headers={**AUTH, **TUS}) as http:
        for photo in photos:
            created = http.post(
                "/api/uploads",
                headers={
                    "Upload-Length": str(photo.stat().st_size),
                    "Upload-Metadata": "filename " + _b64(photo.name),
                },
            )
            created.raise_for_status()
            lines += [f'url = "{base}{created.headers["location"]}"', f'upload-file = "{photo}"']
    config.write_text("\n".join(lines) + "\n")
    _curl(
        "-X",
        "PATCH",
        *("-H", f"Authorization: Bearer {TOKEN}"),
        *("-H", "Tus-Resumable: 1.0.0"),
        *("-H", "Upload-Offset: 0"),
        *("-H", "Content-Type: application/offset+octet-stream"),
        *("--config", str(config)),
    )
    return time.perf_counter() - started


def tus_creation_with_upload(base: str, photos: list[Path], config: Path) -> float:
    """One curl process, one POST a photo that creates its upload with all its bytes
    (tus creation-with-upload, as the web UI sends a photo under 16 MiB)."""
    blocks = []
    for photo in photos:
        blocks.append(
            "\n".join(
                [
                    f'url = "{base}/api/uploads"',
                    f'upload-file = "{photo}"',
                    'request = "POST"',
                    'output = "/dev/null"',
                    "fail",
                    "silent",
                    "show-error",
                    f'header = "Authorization: Bearer {TOKEN}"',
                    'header = "Tus-Resumable: 1.0.0"',
                    'header = "Content-Type: application/offset+octet-stream"',
                    f'header = "Upload-Length: {photo.stat().st_size}"',
                    f'header = "Upload-Metadata: filename {_b64(photo.name)}"',
                ]
            )
        )
    config.write_text("\nnext\n".join(blocks) + "\n")
    started = time.perf_counter()
    subprocess.run(["curl", "--config", str(config)], check=True)
    return time.perf_counter() - started


def curl_to_sink(sink: str, photos: list[Path]) -> float:
    started = time.perf_counter()
    _curl("-T", "{" + ",".join(str(p) for p in photos) + "}", sink + "/")
    return time.perf_counter() - started


def _curl(*args: str) -> None:
    subprocess.run(
        ["curl", "--silent", "--show-error", "--fail", "--output", "/dev/null", *args],
        check=True,
    )


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _clear(folder: Path) -> None:
    for child in folder.iterdir():
        if child.name == ".pp-uploads":
            continue
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()


def body(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-upload-") as scratch:
        tmp = Path(scratch)
        h.heading(f"{args.photos} photos over loopback, {args.rounds} rounds")
        relative = write_photos(str(tmp / "photos"), list(range(args.photos)))
        photos = [tmp / "photos" / name for name, _ in relative]
        total = sum(size for _, size in relative)
        h.note(f"{total / 1e6:.0f} MB in all, {total / len(photos) / 1e6:.1f} MB a photo")
        uploads, landed = tmp / "uploads", tmp / "sink"
        uploads.mkdir()
        landed.mkdir()
        serve_port, sink_port = free_port(), free_port()
        server = start_serve(tmp / "home", uploads, serve_port, tmp / "serve.log")
        sink = start_sink(landed, sink_port, tmp / "sink.log")
        base, sink_url = f"http://127.0.0.1:{serve_port}", f"http://127.0.0.1:{sink_port}"
        try:

            def case(run: Any, folder: Path) -> Any:
                def measured() -> float:
                    seconds = run()
                    _clear(folder)
                    return seconds

                return measured

            results = h.alternate(
                {
                    "tus (tuspy)": case(lambda: tus_with_tuspy(base, photos), uploads),
                    "tus (curl)": case(
                        lambda: tus_with_curl(base, photos, tmp / "curl.conf"), uploads
                    ),
                    "tus (curl, 1 request)": case(
                        lambda: tus_creation_with_upload(base, photos, tmp / "one.conf"), uploads
                    ),
                    "curl → sink": case(lambda: curl_to_sink(sink_url, photos), landed),
                },
                args.rounds,
                order="mirror",
                warmup=1,
            )
        finally:
            server.terminate()
            sink.terminate()
            server.wait(30)
            sink.wait(30)
        rows = []
        for name, seconds in results.items():
            rates = [total / s / 1e6 for s in seconds]
            rows.append([name, statistics.median(rates), min(rates), max(rates)])
        h.table(["case", "MB/s (median)", "min", "max"], rows)
        baseline = results["curl → sink"]
        for name in ("tus (tuspy)", "tus (curl)", "tus (curl, 1 request)"):
            # Throughput ratio: baseline seconds over the case's, round by round.
            pairs = list(zip(baseline, results[name], strict=True))
            figure = re.sub(r"\W+", "_", name).strip("_")
            ratio = h.median_ratio(pairs, name=f"{figure}_vs_curl")
            h.note(f"{name}: {ratio:.2f}× the bare curl upload's throughput (target ≥ 0.8)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.upload", description=__doc__)
    parser.add_argument("--photos", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    return h.run(parser, body, argv)


if __name__ == "__main__":
    raise SystemExit(main())
