"""Student's t and chi-square tail probabilities and quantiles (pure), for the intervals every table prints.

scipy.special has them, but loading it costs a third of a second on every `run`, `show` and `history`; these are
the textbook continued fractions (the regularized incomplete beta and gamma functions, Lentz's method, as in
Numerical Recipes ch. 6.2 and 6.4) and a bisection that inverts them to double precision. tests/test_special.py
checks them against scipy.special's stdtr, stdtrit and chdtri to 1e-10 (relative) over the degrees of freedom
and probabilities storbench asks for. The vectorised simulation in `stats.sequential` keeps scipy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

_TINY = 1e-300
_EPS = 1e-16
_MAX_TERMS = 100_000  # the fractions take about sqrt(a) terms: enough for a million degrees of freedom


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), for x < (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > _TINY else _TINY)
    value = d
    for m in range(1, _MAX_TERMS):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            value *= c * d
        if abs(c * d - 1) < _EPS:
            return value
    raise ArithmeticError(f"incomplete beta ({a}, {b}, {x}) did not converge")


def _stirling_tail(x: float) -> float:
    """log Gamma(x) less Stirling's (x - 1/2) log x - x + log(2 pi) / 2: its asymptotic series, for x >= 10."""
    x2 = x * x
    return (1 / 12 - (1 / 360 - (1 / 1260 - 1 / (1680 * x2)) / x2) / x2) / x


def _log_gamma_ratio(a: float, b: float) -> float:
    """log Gamma(a + b) - log Gamma(a) without the cancellation of two large lgamma values when a is large (the
    terms of Stirling's formula subtracted in closed form: (a - 1/2) log(1 + b/a) + b log(a + b) - b)."""
    if a < 10:
        return math.lgamma(a + b) - math.lgamma(a)
    return (a - 0.5) * math.log1p(b / a) + b * math.log(a + b) - b + _stirling_tail(a + b) - _stirling_tail(a)


def beta_regularized(a: float, b: float, x: float, complement: float | None = None) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1; ``complement`` is 1 - x
    when the caller knows it more exactly than 1 - x can be computed (x close to 1)."""
    y = 1 - x if complement is None else complement
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    # log x from its complement where x is near 1 (and the other way): a * log x is large when a is, and the last
    # bits of x would be its error
    log_x = math.log1p(-y) if x > 0.5 else math.log(x)
    log_y = math.log1p(-x) if y > 0.5 else math.log(y)
    big, small = max(a, b), min(a, b)
    log_front = _log_gamma_ratio(big, small) - math.lgamma(small) + a * log_x + b * log_y
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (scipy.special.stdtr(df, -t))."""
    tail = 0.5 * beta_regularized(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t))
    return tail if t >= 0 else 1 - tail


def _t_density(t: float, df: float) -> float:
    log_norm = _log_gamma_ratio(df / 2, 0.5) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """t such that P(T <= t) = p (scipy.special.stdtrit(df, p)), by bisection to the last bits."""
    if not 0 < p < 1:
        raise ValueError(f"t quantile of p={p}: p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    tail = min(p, 1 - p)  # the smaller tail, as given (1 - (1 - p) would lose p's last digits)
    sign = 1.0 if p > 0.5 else -1.0
    z = NormalDist().inv_cdf(1 - tail)
    start = z + (z**3 + z) / (4 * df)  # Cornish-Fisher's first term
    return sign * _solve(lambda t: t_sf(t, df) - tail, lambda t: -_t_density(t, df), start)


def gamma_q(a: float, x: float) -> float:
    """Q(a, x), the regularized upper incomplete gamma function, for a > 0 and x >= 0."""
    return _gamma_pq(a, x)[1]


def _gamma_pq(a: float, x: float) -> tuple[float, float]:
    """(P(a, x), Q(a, x)), the one computed directly exact and the other its complement."""
    if x <= 0:
        return 0.0, 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # the series of P(a, x)
        term = total = 1 / a
        for n in range(1, _MAX_TERMS):
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * _EPS:
                lower = total * math.exp(log_front)
                return lower, 1 - lower
        raise ArithmeticError(f"incomplete gamma ({a}, {x}) did not converge")
    b = x + 1 - a  # the continued fraction of Q(a, x), modified Lentz
    c, d = 1 / _TINY, 1 / b
    value = d
    for n in range(1, _MAX_TERMS):
        numerator = -n * (n - a)
        b += 2
        d = numerator * d + b
        d = 1 / (d if abs(d) > _TINY else _TINY)
        c = b + numerator / c
        c = c if abs(c) > _TINY else _TINY
        value *= c * d
        if abs(c * d - 1) < _EPS:
            upper = math.exp(log_front) * value
            return 1 - upper, upper
    raise ArithmeticError(f"incomplete gamma ({a}, {x}) did not converge")


@lru_cache(maxsize=4096)
def chi2_isf(q: float, df: float) -> float:
    """x such that P(X > x) = q for chi-square with ``df`` degrees of freedom (scipy.special.chdtri(df, q))."""
    if not 0 < q < 1:
        raise ValueError(f"chi-square quantile of q={q}: q must be in (0, 1)")
    k = df / 2
    log_norm = -k * math.log(2) - math.lgamma(k)
    h = 2 / (9 * df)  # Wilson-Hilferty's cube-root normal approximation to start from
    start = df * max(1 - h + NormalDist().inv_cdf(1 - q) * math.sqrt(h), 0.1) ** 3
    if q > 0.5:  # solved on the lower tail 1 - q, exact where q is near 1
        return _solve(lambda x: (1 - q) - _gamma_pq(k, x / 2)[0],
                      lambda x: -math.exp(log_norm + (k - 1) * math.log(x) - x / 2), start)
    return _solve(lambda x: _gamma_pq(k, x / 2)[1] - q,
                  lambda x: -math.exp(log_norm + (k - 1) * math.log(x) - x / 2), start)


def _solve(excess: Callable[[float], float], slope: Callable[[float], float], start: float) -> float:
    """The root x > 0 of a decreasing ``excess`` (positive below it), from ``start``: Newton's steps with the
    derivative ``slope``, kept inside a bracket that bisection narrows whenever a step would leave it; until the
    step is below the last bits of x."""
    low, high = 0.0, math.inf
    x = start
    for _ in range(2000):
        value = excess(x)
        if value == 0:
            return x
        if value > 0:
            low = x
        else:
            high = x
        step = value / slope(x) if slope(x) else math.inf
        guess = x - step
        if not low < guess < high or not math.isfinite(guess):
            guess = (low + high) / 2 if math.isfinite(high) else 2 * x
        if abs(guess - x) <= 4 * _EPS * abs(x) or guess in (low, high):
            return guess
        x = guess
    raise ArithmeticError("quantile did not converge")
