"""Query tokens, token entropy and the failed-auth limiter, without a server."""

from __future__ import annotations

import base64
import secrets

import pytest
from hypothesis import given
from hypothesis import strategies as st

from photo_pipeline.api.auth import (
    MIN_ENTROPY_BITS,
    WeakToken,
    check_token_strength,
    entropy_bits,
    mint_query_token,
    query_token_expiry,
    sign_query_token,
)
from photo_pipeline.api.ratelimit import FailedAuthLimiter

SECRET = "s" * 43
NOW = 1_800_000_000.0


def test_a_minted_token_opens_its_prefix_until_it_expires():
    token, expires = mint_query_token(SECRET, "/api/assets/", now=NOW)
    assert NOW + 3600 <= expires <= NOW + 2 * 3600
    assert query_token_expiry(SECRET, token, "/api/assets/7/thumbnail", now=NOW) == expires
    assert query_token_expiry(SECRET, token, "/api/assets", now=NOW) == expires
    assert query_token_expiry(SECRET, token, "/api/assetsX/7", now=NOW) is None
    assert query_token_expiry(SECRET, token, "/api/events/stream", now=NOW) is None
    assert query_token_expiry(SECRET, token, "/api/assets/../events/stream", now=NOW) is None
    assert query_token_expiry(SECRET, token, "/api/assets/7/preview", now=expires) is None
    assert query_token_expiry("another secret", token, "/api/assets/7", now=NOW) is None


def test_a_token_for_one_prefix_cannot_be_rebound_to_another():
    token = sign_query_token(SECRET, int(NOW) + 60, "/api/assets/")
    expires, _, signature = token.split(".")
    wider = base64.urlsafe_b64encode(b"/api/").decode().rstrip("=")
    assert query_token_expiry(SECRET, f"{expires}.{wider}.{signature}", "/api/x", NOW) is None
    later = str(int(expires) + 3600)
    assert (
        query_token_expiry(SECRET, token.replace(expires, later, 1), "/api/assets/1", NOW) is None
    )


@pytest.mark.parametrize(
    "token",
    [
        "².x",
        "%C2%B2.x",
        "9" * 40 + ".L2FwaS8." + "A" * 43,
        "٣٣٣٣٣٣٣٣٣٣.L2FwaS8." + "A" * 43,
        "1900000000.L2FwaS8." + "é" * 43,
        "1900000000.L2FwaS8." + "A" * 44,
        "1900000000.%%%." + "A" * 43,
        "1900000000.AAAA." + "A" * 43,  # a prefix that is not UTF-8 text
        "",
        ".",
        "..",
    ],
)
def test_malformed_query_tokens_are_refused_not_errors(token):
    assert query_token_expiry(SECRET, token, "/api/events/stream", now=NOW) is None


@given(st.text(max_size=200), st.text(max_size=50))
def test_no_text_makes_the_query_token_check_raise(token, path):
    assert query_token_expiry(SECRET, token, path, now=NOW) is None


def test_generated_tokens_have_enough_entropy_and_short_ones_do_not():
    # load_or_create_token makes them with secrets.token_urlsafe(32): 256 random bits.
    for _ in range(200):
        assert entropy_bits(secrets.token_urlsafe(32)) >= MIN_ENTROPY_BITS
    for weak in ["x", "hunter2", "password123", "a" * 200, "0123456789" * 3, "ab" * 60]:
        assert entropy_bits(weak) < MIN_ENTROPY_BITS, weak


@pytest.mark.parametrize(
    "patterned",
    [
        "0123456789abcdef0123456789abcdef",  # all 16 hex digits: 128 bits by alphabet alone
        "fedcba9876543210fedcba9876543210",
        "0123456789abcdef" * 4,
        "deadbeef" * 8,
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
        "aceg" + "ikmoqsuwy" * 4,  # a run of step 2, then its repeats
        "Tr0ub4dor&3-" * 6,
    ],
)
def test_repeated_or_sequential_tokens_are_weak_however_long(patterned):
    assert entropy_bits(patterned) < MIN_ENTROPY_BITS
    with pytest.raises(WeakToken) as refused:
        check_token_strength(patterned, "PHOTO_PIPELINE_TOKEN", "0.0.0.0")
    assert refused.value.code == "weak_api_token"
    assert "0.0.0.0" in refused.value.detail and "PHOTO_PIPELINE_TOKEN" in refused.value.detail


def test_random_hex_tokens_of_256_bits_pass():
    # openssl rand -hex 32: chance runs and repeats cost a few characters (it scored
    # 209 bits at the least in 100,000 draws), never the threshold.
    for _ in range(200):
        check_token_strength(secrets.token_hex(32), "PHOTO_PIPELINE_TOKEN", "0.0.0.0")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_limiter_allows_a_burst_then_one_failure_per_refill():
    clock = Clock()
    limiter = FailedAuthLimiter(capacity=3, per_second=0.5, clock=clock)
    for _ in range(3):
        assert limiter.wait_seconds("a") == 0
        limiter.failed("a")
    assert limiter.wait_seconds("a") == pytest.approx(2.0)
    assert limiter.wait_seconds("b") == 0  # per address
    clock.now = 2.0
    assert limiter.wait_seconds("a") == 0
    limiter.failed("a")
    assert limiter.wait_seconds("a") > 0


def test_the_limiter_forgets_addresses_beyond_its_bound():
    clock = Clock()
    limiter = FailedAuthLimiter(capacity=1, per_second=1, max_clients=100, clock=clock)
    for n in range(1000):
        limiter.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(limiter._buckets) <= 100
    assert limiter.wait_seconds("10.0.3.231") > 0  # the newest are kept
