"""Small-sample statistics for the diff gate (nsysql/answers/gate.py): Student's t distribution and Welch's interval
for the difference of two means. Pure Python (no SciPy in nsysql's dependencies): the t quantile inverts the
t distribution's CDF, written with the regularized incomplete beta function (its continued fraction, evaluated by
the modified Lentz method), by bisection; accurate to ~1e-10, far below what a percentage with one decimal shows."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function I_x(a, b) (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (any real df > 0)."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for 0 < p < 1 and df > 0."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError("t_quantile needs 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


@dataclass(frozen=True)
class Welch:
    """Welch's interval for mean(new) - mean(base): the difference, its bounds at `level`, and the
    Welch-Satterthwaite degrees of freedom (None when both samples have no spread: the bounds are the difference)."""
    difference: float
    low: float
    high: float
    df: float | None
    level: float


def welch(base: Sequence[float], new: Sequence[float], level: float = 0.95) -> Welch:
    """The `level` interval of mean(new) - mean(base) from two independent samples of 2 or more values each,
    without assuming equal variances: d +- t(1 - (1 - level) / 2, df) * sqrt(s1^2/n1 + s2^2/n2)."""
    n1, n2 = len(base), len(new)
    if n1 < 2 or n2 < 2:
        raise ValueError("welch needs 2 or more values on each side")
    m1, m2 = statistics.fmean(base), statistics.fmean(new)
    v1, v2 = statistics.variance(base) / n1, statistics.variance(new) / n2
    d = m2 - m1
    se2 = v1 + v2
    if se2 <= 0.0:
        return Welch(d, d, d, None, level)
    df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * math.sqrt(se2)
    return Welch(d, d - half, d + half, df, level)
