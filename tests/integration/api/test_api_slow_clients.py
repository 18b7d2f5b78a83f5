"""Slow and unauthenticated clients against a real ``photo-pipeline serve`` on loopback:
idle connections, headers that never end, bodies that stall, unauthenticated 1 MB
uploads. The server closes each by its deadlines or refuses it before reading its body,
keeps serving, and its memory returns to its baseline. Bounded: 140 connections a round,
short deadlines (set on the command line), every wait a polled condition."""

from __future__ import annotations

import json
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.api_server import free_port
from tests.support.cli_processes import environment, wait_until

TOKEN = "slow-client-test-" + "k" * 40  # long enough for any bind address
BODY_BYTES = 1_000_000
FIRST_PART = 64 * 1024  # what a stalled upload sends before it stops
DEADLINE = 60.0  # for the server to close everything; its own deadlines are 1 s
OTHER_CLIENT = "127.0.0.2"


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


class Server:
    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.log_path = tmp_path / "serve.log"
        env = environment(f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home")
        env["PHOTO_PIPELINE_TOKEN"] = TOKEN
        command = [
            sys.executable,
            "-m",
            "photo_pipeline",
            "serve",
            "--port",
            str(self.port),
            "--workers-embedded",
            "0",
            "--header-timeout",
            "1",
            "--body-timeout",
            "1",
            "--keep-alive-timeout",
            "1",
            "--max-connections",
            "1000",
        ]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.healthy, "the server to answer", timeout=60)

    def healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"serve exited: {self.log_path.read_text()}")
        try:
            return httpx.get(self.url("/api/health"), timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connect(self, payload: bytes = b"", source: str = "127.0.0.1") -> socket.socket:
        sock = socket.create_connection(
            ("127.0.0.1", self.port), timeout=10, source_address=(source, 0)
        )
        if payload:
            sock.sendall(payload)
        return sock

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _upload_headers(authorized: bool) -> bytes:
    auth = f"Authorization: Bearer {TOKEN}\r\n" if authorized else ""
    return (
        "POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: {BODY_BYTES}\r\n\r\n"
    ).encode()


def _read_until_closed(socks: list[socket.socket]) -> dict[socket.socket, bytes]:
    """Everything each socket receives until the server closes it (EOF or reset)."""
    received = {sock: b"" for sock in socks}
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    deadline = time.monotonic() + DEADLINE
    open_count = len(socks)
    while open_count:
        assert time.monotonic() < deadline, f"{open_count} connections still open"
        for key, _ in selector.select(timeout=1):
            sock = key.fileobj
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if chunk:
                received[sock] += chunk
            else:
                selector.unregister(sock)
                sock.close()
                open_count -= 1
    return received


def _flood(server: Server) -> None:
    """One round: 40 idle connections, 10 kept alive after one answer, 30 whose headers
    never end, 30 unauthenticated and 30 authenticated uploads that stall after 64 KiB
    of 1 MB. The authenticated ones
    come from another loopback address: failed auth is limited per address, and the
    anonymous uploads spend 127.0.0.1's budget."""
    idle = [server.connect() for _ in range(40)]
    kept = [
        server.connect(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") for _ in range(10)
    ]
    half = [
        server.connect(b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") for _ in range(30)
    ]
    first_part = b"[" + b" " * (FIRST_PART - 1)
    anonymous = [server.connect(_upload_headers(False) + first_part) for _ in range(30)]
    stalled = [
        server.connect(_upload_headers(True) + first_part, source=OTHER_CLIENT) for _ in range(30)
    ]
    received = _read_until_closed(idle + kept + half + anonymous + stalled)
    for sock in idle + half:
        assert received[sock] == b""  # closed by the header deadline, nothing to answer
    for sock in kept:
        # Answered, then closed by the keep-alive deadline.
        assert received[sock].startswith(b"HTTP/1.1 200"), received[sock][:200]
    for sock in anonymous:
        answer = received[sock].decode("latin-1").lower()
        # Refused from its headers: the server answered while most of the body was unsent
        # (401; or 429 once the address has failed too often).
        assert answer.startswith(("http/1.1 401", "http/1.1 429")), answer[:200]
        assert "connection: close" in answer and "application/problem+json" in answer
    for sock in stalled:
        answer = received[sock].decode("latin-1").lower()
        assert answer.startswith("http/1.1 408"), answer[:200]
        assert '"code":"request_timeout"' in answer


def _unparsable_requests_get_a_problem(server: Server) -> None:
    """Not HTTP, or a header line that is none: 400 as problem+json, like every error."""
    garbage = server.connect(b"\x16\x03\x01 not http at all\r\n\r\n")
    broken = server.connect(b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon\r\n\r\n")
    received = _read_until_closed([garbage, broken])
    for sock in (garbage, broken):
        head, _, body = received[sock].partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), received[sock][:200]
        assert b"content-type: application/problem+json" in head.lower()
        problem = json.loads(body)
        assert (problem["status"], problem["code"]) == (400, "bad_request")


@pytest.mark.timeout(240)
def test_slow_and_unauthenticated_clients_are_cut_off_and_memory_returns(tmp_path):
    server = Server(tmp_path)
    try:
        _flood(server)  # warms up every path the flood takes
        baseline = _rss_kib(server.proc.pid)
        for _ in range(3):
            _flood(server)
        after = _rss_kib(server.proc.pid)
        wait_until(
            lambda: _rss_kib(server.proc.pid) <= baseline * 1.10,
            f"RSS back within 10% of {baseline} KiB (was {after} KiB after the flood)",
            timeout=DEADLINE,
        )
        assert server.healthy()
        _unparsable_requests_get_a_problem(server)
        with httpx.Client(
            headers={"Authorization": f"Bearer {TOKEN}"},
            transport=httpx.HTTPTransport(local_address=OTHER_CLIENT),
            timeout=10,
        ) as http:
            assert http.get(server.url("/api/jobs")).status_code == 200
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    print(f"RSS baseline {baseline} KiB, after 3 floods {after} KiB")


def test_binding_beyond_loopback_needs_a_strong_token_and_warns(tmp_path):
    base = [sys.executable, "-m", "photo_pipeline", "serve", "--workers-embedded", "0"]
    env = environment(f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home")
    weak = subprocess.run(
        [*base, "--host", "0.0.0.0", "--port", str(free_port())],
        env={**env, "PHOTO_PIPELINE_TOKEN": "hunter2"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert weak.returncode == 2
    assert "0.0.0.0" in weak.stderr and "128 bits" in weak.stderr
    # Long enough and all 16 hex digits, but a pattern: as weak.
    patterned = subprocess.run(
        [*base, "--host", "0.0.0.0", "--port", str(free_port())],
        env={**env, "PHOTO_PIPELINE_TOKEN": "0123456789abcdef" * 2},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert patterned.returncode == 2, patterned.stderr
    assert "error weak_api_token:" in patterned.stderr
    assert "0.0.0.0" in patterned.stderr and "guessable" in patterned.stderr
    # A generated token is strong: the server starts, and warns naming the address.
    port = free_port()
    log_path = tmp_path / "exposed.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [*base, "--host", "0.0.0.0", "--port", str(port)],
            env={k: v for k, v in env.items() if k != "PHOTO_PIPELINE_TOKEN"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(
            lambda: "Uvicorn running" in log_path.read_text() or proc.poll() is not None,
            "the exposed server to start",
            timeout=60,
        )
        text = log_path.read_text()
        assert proc.poll() is None, text
        assert "warning: serving on 0.0.0.0" in text
        token = (tmp_path / "home" / "api-token").read_text().strip()
        assert token not in text  # not on a terminal: the token stays in its file
    finally:
        proc.terminate()
        proc.wait(timeout=30)
