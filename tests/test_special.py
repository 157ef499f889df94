"""stats.special against scipy.special: the t and chi-square tails and quantiles every interval uses."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import chdtri, stdtr, stdtrit

from storbench.stats.estimate import estimate
from storbench.stats.special import beta_regularized, chi2_isf, gamma_q, t_quantile, t_sf

# the degrees of freedom storbench asks for: n - 1 of a few to thousands of repetitions, Welch's fractional ones
DF = st.one_of(st.integers(1, 5000).map(float), st.floats(1.0, 20_000.0))
# lower tails and upper quantiles as far as a Bonferroni correction over many points goes
P = st.one_of(st.floats(1e-9, 0.4), st.floats(0.6, 1 - 1e-9))


def close(ours: float, theirs: float, rel: float = 1e-10) -> bool:
    return abs(ours - theirs) <= rel * abs(theirs) + 1e-300


@settings(max_examples=150, deadline=None)
@given(DF, P)
def test_t_quantile_matches_scipy(df: float, p: float) -> None:
    assert close(t_quantile(p, df), float(stdtrit(df, p)))


@settings(max_examples=150, deadline=None)
@given(DF, st.floats(-60.0, 60.0).filter(lambda t: t == 0 or abs(t) > 1e-6))
def test_t_tail_matches_scipy(df: float, t: float) -> None:
    # (near t = 0 scipy's stdtr rounds to 0.5 where the tail is 0.5 - 2.5e-10: see the closed forms below)
    assert close(t_sf(t, df), float(stdtr(df, -t)))


@settings(max_examples=100, deadline=None)
@given(st.floats(-1e3, 1e3))
def test_t_tail_of_one_and_two_degrees_is_the_closed_form(t: float) -> None:
    def cauchy(u: float) -> float:  # P(T > u), u >= 0, without cancellation
        return math.atan2(1.0, u) / math.pi

    def two(u: float) -> float:
        r = math.sqrt(2 + u * u)
        return 1 / (r * (r + u))

    for df, tail in ((1.0, cauchy), (2.0, two)):
        assert close(t_sf(t, df), tail(t) if t >= 0 else 1 - tail(-t), 1e-12), df


@settings(max_examples=150, deadline=None)
@given(DF, st.floats(1e-9, 1 - 1e-9))
def test_chi_square_quantile_matches_scipy(df: float, q: float) -> None:
    assert close(chi2_isf(q, df), float(chdtri(df, q)))


def test_known_values() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.706204736174707, rel=1e-12)  # tables' t(1)
    assert t_quantile(0.975, 9) == pytest.approx(2.262157162798205, rel=1e-12)
    assert t_quantile(0.5, 7) == 0.0
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4), rel=1e-14)
    assert t_sf(0.0, 3) == 0.5
    assert chi2_isf(0.05, 1) == pytest.approx(3.841458820694124, rel=1e-12)  # 1.96 squared
    assert chi2_isf(0.5, 2) == pytest.approx(2 * math.log(2), rel=1e-12)  # exponential: the median of chi2(2)
    assert beta_regularized(1, 1, 0.3) == pytest.approx(0.3)  # uniform
    assert gamma_q(1, 2.0) == pytest.approx(math.exp(-2.0))  # exponential tail
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="must be in"):
            t_quantile(bad, 3)
        with pytest.raises(ValueError, match="must be in"):
            chi2_isf(bad, 3)


def test_an_interval_is_the_textbook_one() -> None:
    values = [10.0, 12.0, 11.0, 13.0]
    got = estimate(values)
    assert got is not None and got.ci_low is not None and got.ci_high is not None
    half = float(stdtrit(3, 0.975)) * got.stddev / 2
    assert got.ci_low == pytest.approx(11.5 - half, rel=1e-12)
    assert got.ci_high == pytest.approx(11.5 + half, rel=1e-12)
