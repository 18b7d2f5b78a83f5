"""Several hosts on one machine: network namespaces joined by veth pairs to a bridge
in a database namespace, where a PostgreSQL of the test's own listens.

Every address used here belongs to namespaces this module creates, and everything is
torn down afterwards. The test process reaches the database through its Unix socket
(the namespaces share the filesystem), the hosts through the bridge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "10.213.77"
DB_ADDRESS = f"{SUBNET}.1"
PG_PORT = 5432
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=check)


def unavailable() -> str | None:
    """Why this machine cannot build the test network, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip") or not shutil.which("runuser"):
        return "iproute2 (ip) and runuser are needed"
    if _pg_bin() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found"
    probe = f"pp-probe-{uuid.uuid4().hex[:6]}"
    made = run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    run("ip", "netns", "delete", probe, check=False)
    return None


def _pg_bin() -> Path | None:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    return None


@dataclass
class Host:
    """A namespace with one interface (``eth0``) on the test network."""

    name: str
    address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def link(self, up: bool) -> None:
        """Plug the host's cable in or pull it out (a partition)."""
        run("ip", "-n", self.name, "link", "set", "eth0", "up" if up else "down")

    def spawn(self, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.name, *args], env=env, stdout=out, stderr=out
            )
        self.processes.append(process)
        return process


class HostNetwork:
    """A database namespace with a bridge and PostgreSQL, and ``hosts`` namespaces."""

    def __init__(self, hosts: int) -> None:
        tag = uuid.uuid4().hex[:6]
        self.db_ns = f"ppdb-{tag}"
        self.hosts = [Host(f"pph{i}-{tag}", f"{SUBNET}.{10 + i}") for i in range(hosts)]
        self._tag = tag
        self._made: list[str] = []
        self.workdir = Path(tempfile.mkdtemp(prefix="pp-multihost-"))
        self.data = self.workdir / "pgdata"
        self.socket_dir = self.workdir / "socket"
        self.pg_bin = _pg_bin()

    # ── network ────────────────────────────────────────────────────────────────
    def build(self) -> None:
        self._namespace(self.db_ns)
        run("ip", "-n", self.db_ns, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.db_ns, "addr", "add", f"{DB_ADDRESS}/24", "dev", "br0")
        run("ip", "-n", self.db_ns, "link", "set", "br0", "up")
        for i, host in enumerate(self.hosts):
            self._namespace(host.name)
            outer, inner = f"vd{i}-{self._tag}", f"vh{i}-{self._tag}"
            run("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
            run("ip", "link", "set", inner, "netns", host.name)
            run("ip", "link", "set", outer, "netns", self.db_ns)
            run("ip", "-n", host.name, "link", "set", inner, "name", "eth0")
            run("ip", "-n", host.name, "addr", "add", f"{host.address}/24", "dev", "eth0")
            run("ip", "-n", host.name, "link", "set", "eth0", "up")
            run("ip", "-n", self.db_ns, "link", "set", outer, "master", "br0")
            run("ip", "-n", self.db_ns, "link", "set", outer, "up")

    def _namespace(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self._made.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")

    # ── PostgreSQL ─────────────────────────────────────────────────────────────
    def _as_postgres(self, *args: str, netns: bool = False) -> list[str]:
        prefix = ["ip", "netns", "exec", self.db_ns] if netns else []
        return [*prefix, "runuser", "-u", "postgres", "--", *args]

    def init_database(self) -> None:
        assert self.pg_bin is not None
        self.socket_dir.mkdir()
        shutil.chown(self.workdir, "postgres")
        shutil.chown(self.socket_dir, "postgres")
        os.chmod(self.workdir, 0o755)
        subprocess.run(
            self._as_postgres(
                str(self.pg_bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"
            ),
            capture_output=True,
            check=True,
        )
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 trust\n")
        self.start_database()
        subprocess.run(
            [
                str(self.pg_bin / "createdb"),
                "-h",
                str(self.socket_dir),
                "-U",
                "postgres",
                "library",
            ],
            capture_output=True,
            check=True,
        )

    def start_database(self) -> None:
        assert self.pg_bin is not None
        options = (
            f"-c listen_addresses={DB_ADDRESS} -c port={PG_PORT} "
            f"-c unix_socket_directories={self.socket_dir} -c fsync=off "
            "-c max_connections=200"
        )
        subprocess.run(
            self._as_postgres(
                str(self.pg_bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.data / "server.log"),
                "-o",
                options,
                "-w",
                "start",
                netns=True,
            ),
            capture_output=True,
            check=True,
        )

    def stop_database(self) -> None:
        assert self.pg_bin is not None
        subprocess.run(
            self._as_postgres(
                str(self.pg_bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"
            ),
            capture_output=True,
            check=False,
        )

    @property
    def host_url(self) -> str:
        """The database as the hosts reach it, over the bridge."""
        return f"postgresql+psycopg://postgres@{DB_ADDRESS}:{PG_PORT}/library"

    @property
    def local_url(self) -> str:
        """The database as the test process reaches it, through the socket."""
        return f"postgresql+psycopg://postgres@/library?host={self.socket_dir}&port={PG_PORT}"

    # ── teardown ───────────────────────────────────────────────────────────────
    def close(self) -> None:
        for host in self.hosts:
            for process in host.processes:
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.send_signal(signal.SIGCONT)
                        process.kill()
                    process.wait()
        self.stop_database()
        for name in reversed(self._made):
            run("ip", "netns", "delete", name, check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def host_network(hosts: int = 2) -> Iterator[HostNetwork]:
    network = HostNetwork(hosts)
    try:
        network.build()
        network.init_database()
        yield network
    finally:
        network.close()


def worker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "photo_pipeline", "worker", *args]
