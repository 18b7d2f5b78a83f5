import psycopg.errors
import pytest
from sqlalchemy.exc import OperationalError

from photo_pipeline.db.errors import DatabaseUnavailable, transactional


def operational(orig: Exception) -> OperationalError:
    return OperationalError("UPDATE jobs ...", {}, orig)


def test_deadlock_victim_runs_again():
    calls = []

    @transactional
    def work(value: int) -> int:
        calls.append(value)
        if len(calls) < 3:
            raise operational(psycopg.errors.DeadlockDetected("deadlock detected"))
        return value * 2

    assert work(21) == 42
    assert calls == [21, 21, 21]


def test_persistent_deadlock_gives_up():
    @transactional
    def work() -> None:
        raise operational(psycopg.errors.SerializationFailure("could not serialize"))

    with pytest.raises(DatabaseUnavailable) as err:
        work()
    assert err.value.code == "database_unavailable"


def test_other_operational_errors_are_translated_at_once():
    calls = []

    @transactional
    def work() -> None:
        calls.append(1)
        raise operational(psycopg.errors.ConnectionTimeout("connection timed out"))

    with pytest.raises(DatabaseUnavailable, match="timed out"):
        work()
    assert calls == [1]
