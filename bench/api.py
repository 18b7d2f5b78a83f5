"""Benchmark the HTTP API: SSE fan-out during a running import, and job reads.

Run with ``.venv/bin/python -m bench.api [--streams 100] [--clients 50] [--photos 1500]
[--database-url URL]``. It starts ``photo-pipeline serve`` (with its embedded worker)
in a subprocess on a fresh library, then, from this process:

1. SSE fan-out: opens ``--streams`` concurrent ``/api/events/stream`` connections,
   starts an import of generated photos through ``POST /api/jobs`` and reads every
   stream until the import's last job finishes. Prints durable events written per
   second (the baseline: what one reader must keep up with), messages and events
   delivered per second over all streams, the fan-out ratio delivered / (written x
   streams) (1.0 = every stream saw every event), and the delay from an event's
   write (its ``created_at``, taken just before commit) to its arrival at a client:
   median and p99.
2. Reads: ``GET /api/jobs/{id}`` from ``--clients`` concurrent clients, requests/s,
   against ``GET /api/health`` (no database) in the same run as the baseline.

Client and server share this machine's cores; read the ratios, not the absolutes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench import _harness as h
from photo_pipeline.sample import write_sample

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FINISHED = ("state:succeeded", "state:failed", "state:cancelled")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    home: Path, port: int, database_url: str | None, connections: int
) -> subprocess.Popen:
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(home), "PHOTO_PIPELINE_TOKEN": TOKEN}
    if database_url:
        env["PHOTO_PIPELINE_DATABASE_URL"] = database_url
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "photo_pipeline", "serve", "--port", str(port)),
            # Every stream and client comes from 127.0.0.1: lift the per-client caps.
            *("--max-streams-per-client", str(connections)),
            *("--max-connections", str(connections + 50)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(home.parent / "server.log").open("w"),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the server did not start")


async def read_stream(
    client: httpx.AsyncClient, after: int, finished: asyncio.Event, stats: dict, ready
) -> None:
    async with client.stream("GET", f"/api/events/stream?after={after}") as response:
        ready()
        buffer = ""
        async for chunk in response.aiter_text():
            buffer += chunk
            while "\r\n\r\n" in buffer:
                frame, buffer = buffer.split("\r\n\r\n", 1)
                data = [line[6:] for line in frame.split("\r\n") if line.startswith("data: ")]
                if not data:
                    continue  # a keep-alive comment
                message = json.loads(data[0])
                now = datetime.now(UTC)
                stats["messages"] += 1
                stats["events"] += len(message.get("seqs", [message["seq"]]))
                created = datetime.fromisoformat(message["created_at"])
                stats["delays"].append((now - created).total_seconds())
                if message["job_id"] == stats["last_job"] and message["type"] in FINISHED:
                    finished.set()
                    return


async def fan_out(base: str, photos: Path, streams: int) -> None:
    limits = httpx.Limits(max_connections=streams + 10)
    async with httpx.AsyncClient(
        base_url=base, headers=AUTH, timeout=None, limits=limits
    ) as client:
        connected = 0
        all_connected = asyncio.Event()

        def ready() -> None:
            nonlocal connected
            connected += 1
            if connected == streams:
                all_connected.set()

        stats = [
            {"messages": 0, "events": 0, "delays": [], "last_job": None} for _ in range(streams)
        ]
        done = [asyncio.Event() for _ in range(streams)]
        tasks = [
            asyncio.create_task(read_stream(client, 0, done[i], stats[i], ready))
            for i in range(streams)
        ]
        await asyncio.wait_for(all_connected.wait(), 60)
        started = time.perf_counter()
        answer = await client.post(
            "/api/jobs", json={"type": "import", "params": {"paths": [str(photos)]}}
        )
        answer.raise_for_status()
        last_job = answer.json()["id"]
        for s in stats:
            s["last_job"] = last_job
        await asyncio.wait_for(asyncio.gather(*tasks), 1800)
        elapsed = time.perf_counter() - started
        jobs = (await client.get("/api/jobs", params={"limit": 100})).json()["jobs"]
        total_events = 0
        for job in jobs:
            total_events += len(
                (await client.get(f"/api/jobs/{job['id']}/events", params={"limit": 1000})).json()
            )
    delivered = sum(s["events"] for s in stats)
    messages = sum(s["messages"] for s in stats)
    delays = sorted(d for s in stats for d in s["delays"])
    written = total_events / elapsed
    h.heading(f"1. SSE fan-out: {streams} streams, import of {len(list(photos.rglob('*.jpg')))} "
              "photos")  # fmt: skip
    h.note(f"import took {elapsed:.1f} s; {len(jobs)} jobs, {total_events} durable events")
    h.table(["", "value"], [
        ["events written/s (baseline)", written],
        ["messages delivered/s, all streams", messages / elapsed],
        ["events delivered/s, all streams", delivered / elapsed],
        ["fan-out ratio delivered / (written x streams)",
         f"{h.figure('fan-out', delivered / (total_events * streams)):.3f}"],
        ["events per message (coalescing)", delivered / messages],
        ["write-to-client delay, median ms", statistics.median(delays) * 1000],
        ["write-to-client delay, p99 ms", delays[int(len(delays) * 0.99)] * 1000],
    ])  # fmt: skip


async def reads(base: str, clients: int, total: int) -> None:
    async with httpx.AsyncClient(
        base_url=base, headers=AUTH, limits=httpx.Limits(max_connections=clients)
    ) as client:
        job_id = (await client.get("/api/jobs", params={"limit": 1})).json()["jobs"][0]["id"]

        async def run(path: str) -> float:
            remaining = total

            async def one_client() -> None:
                nonlocal remaining
                while remaining > 0:
                    remaining -= 1
                    (await client.get(path)).raise_for_status()

            started = time.perf_counter()
            await asyncio.gather(*(one_client() for _ in range(clients)))
            return total / (time.perf_counter() - started)

        health = await run("/api/health")
        job = await run(f"/api/jobs/{job_id}")
    h.heading(f"2. reads, {clients} concurrent clients, {total} requests each")
    h.table(["request", "req/s", "vs baseline"], [
        ["GET /api/health (baseline)", health, "1.00x"],
        ["GET /api/jobs/{id}", job, h.ratio(job, health, name="job read / health")],
    ])  # fmt: skip


def body(args: Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="pp_bench_api_") as tmp:
        root = Path(tmp)
        write_sample(root / "photos", args.photos)
        port = free_port()
        server = start_server(
            root / "home", port, args.database_url, max(args.streams, args.clients)
        )
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(fan_out(base, root / "photos", args.streams))
            asyncio.run(reads(base, args.clients, args.requests))
        except Exception:
            print((root / "server.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            server.terminate()
            server.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--photos", type=int, default=1500)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--database-url", default=None)
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
