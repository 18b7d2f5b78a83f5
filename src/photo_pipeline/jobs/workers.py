"""The registry of worker processes: who is working, where, and who died."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import LEASED_JOB_STATES, jobs, workers
from photo_pipeline.jobs.clock import Clock, db_now
from photo_pipeline.jobs.states import WorkerState

RUNNING, STOPPED, DEAD = WorkerState.RUNNING, WorkerState.STOPPED, WorkerState.DEAD


def new_worker_id() -> str:
    """``host:pid:random`` — unique even when a pid is reused."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (signal 0 probes only)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by somebody else
    return True


class WorkerRegistry:
    def __init__(
        self, session_factory: sessionmaker[Session], *, clock: Clock | None = None
    ) -> None:
        self._session_factory = session_factory
        self._clock = clock

    def _now(self) -> Any:
        """The database's time (a worker's own clock may be off), or the given one."""
        if self._clock is not None:
            return self._clock()
        return db_now(self._session_factory)

    @transactional
    def register(self, worker_id: str, job_types: Iterable[str]) -> None:
        now = self._now()
        with write_session(self._session_factory) as session:
            session.execute(
                insert(workers).values(
                    id=worker_id,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    job_types=sorted(job_types),
                    state=RUNNING,
                    started_at=now,
                    heartbeat_at=now,
                )
            )

    @transactional
    def beat(self, worker_id: str) -> None:
        with write_session(self._session_factory) as session:
            session.execute(
                update(workers).where(workers.c.id == worker_id).values(heartbeat_at=self._now())
            )

    @transactional
    def stop(self, worker_id: str) -> None:
        self._set_state([worker_id], STOPPED)

    @transactional
    def find_dead_on_this_host(self) -> list[str]:
        """Mark registered workers of this host whose process is gone as dead and
        return their ids: their jobs can be recovered now, not when leases end."""
        with read_session(self._session_factory) as session:
            rows = session.execute(
                select(workers.c.id, workers.c.pid).where(
                    workers.c.host == socket.gethostname(), workers.c.state == RUNNING
                )
            ).all()
        dead = [row.id for row in rows if not pid_alive(row.pid)]
        if dead:
            self._set_state(dead, DEAD)
        return dead

    def list(self, *, include_finished: bool = False) -> list[dict[str, Any]]:
        query = select(workers).order_by(workers.c.started_at.desc())
        if not include_finished:
            query = query.where(workers.c.state == RUNNING)
        with read_session(self._session_factory) as session:
            found = [dict(row._mapping) for row in session.execute(query)]
            held = session.execute(
                select(jobs.c.lease_owner, jobs.c.id, jobs.c.job_type)
                .where(
                    jobs.c.lease_owner.in_([w["id"] for w in found]),
                    jobs.c.state.in_(LEASED_JOB_STATES),
                )
                .order_by(jobs.c.id)
            ).all()
        for worker in found:  # what each is working on now
            worker["current_jobs"] = [
                {"id": job_id, "job_type": job_type}
                for owner, job_id, job_type in held
                if owner == worker["id"]
            ]
        return found

    def _set_state(self, worker_ids: Sequence[str], state: str) -> None:
        with write_session(self._session_factory) as session:
            session.execute(
                update(workers)
                .where(workers.c.id.in_(worker_ids), workers.c.state == RUNNING)
                .values(state=state, stopped_at=self._now())
            )
