"""What the coordinator's modules work with: the session factory, the dialect, the
time decisions are made with, and (PostgreSQL) a connection on which a one-statement
change commits by itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.jobs.clock import Clock, TrustedClock


class JobStore:
    """One per ``JobService``; holds no state of its own beyond what it is given."""

    def __init__(self, session_factory: sessionmaker[Session], clock: Clock | None) -> None:
        self.session_factory = session_factory
        self.engine: Engine = session_factory.kw["bind"]
        self.is_postgresql = self.engine.dialect.name == "postgresql"
        # Without a clock (production) leases, expiry, backoff and recovery use the
        # database's time; a clock given (tests) is used instead.
        self.clock = TrustedClock(self.engine.dialect, clock)

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """PostgreSQL: a connection on which each statement commits by itself (one
        round trip for a one-statement change, no BEGIN/COMMIT)."""
        with self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")
