"""Python's round(x, d) and format(x, ".2f") over whole columns, bit for bit.

GRACE rounds every step score with Python's `round(score, 3)`: the exact binary value of the
double is rounded to 3 decimals, ties to even, and the result is the double nearest to that
decimal. Polars' and numpy's `round` scale by 10**d in floating point first, which moves values
such as 0.4275 (binary 0.42749999...) or 0.8995 across the half, so they disagree with Python
on some inputs. Here the scaling is done in 64-bit integers on the double's exact mantissa:
x = M * 2**(e - 53) exactly, so x * 10**d = M * 10**d * 2**(e - 53), and the integer part and
the remainder against the half are exact. M < 2**53 and 10**3 < 2**10, so M * 10**d fits in 63
bits for d <= 3.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["MAX_DECIMALS", "rate_label", "round_half_even", "scaled_half_even"]

MAX_DECIMALS = 3
"""The most decimals the exact integer scaling supports."""

_MANTISSA_BITS = 53


def scaled_half_even(values: npt.NDArray[np.float64], decimals: int) -> npt.NDArray[np.int64]:
    """round(|x| * 10**decimals) as an integer, the product taken exactly and ties to even.

    Args:
        values: finite doubles with |x| < 2**40 (scores and rates lie in [0, 1]).
        decimals: 0 to MAX_DECIMALS.
    """
    if not 0 <= decimals <= MAX_DECIMALS:
        raise ValueError(f"decimals must lie in [0, {MAX_DECIMALS}], received {decimals}")
    mantissa, exponent = np.frexp(np.abs(values))
    whole = (mantissa * float(2**_MANTISSA_BITS)).astype(np.uint64)
    scaled = whole * np.uint64(10**decimals)
    shift = (_MANTISSA_BITS - exponent).astype(np.int64)
    # Below 2**-11 the product is under 0.49 and rounds to 0; such shifts would overflow.
    tiny = shift >= 64
    shift = np.where(tiny, 1, shift).astype(np.uint64)
    floor = scaled >> shift
    remainder = scaled - (floor << shift)
    half = np.uint64(1) << (shift - np.uint64(1))
    up = (remainder > half) | ((remainder == half) & (floor % np.uint64(2) == 1))
    rounded = (floor + up.astype(np.uint64)).astype(np.int64)
    return np.where(tiny, 0, rounded)


def _round_array(values: npt.NDArray[np.float64], decimals: int) -> npt.NDArray[np.float64]:
    scaled = scaled_half_even(values, decimals).astype(np.float64)
    # scaled is an exact integer; one IEEE division gives the double nearest scaled / 10**d.
    return np.copysign(scaled / float(10**decimals), values)


def round_half_even(expr: pl.Expr, decimals: int) -> pl.Expr:
    """`expr` rounded exactly as Python's round(x, decimals) rounds each value (finite values
    with |x| < 2**40, no nulls)."""

    def rounded(series: pl.Series) -> pl.Series:
        values = series.to_numpy().astype(np.float64, copy=False)
        return pl.Series(series.name, _round_array(values, decimals), dtype=pl.Float64)

    return expr.map_batches(rounded, return_dtype=pl.Float64, is_elementwise=True)


def rate_label(expr: pl.Expr) -> pl.Expr:
    """format(rate, ".2f") for rates in [0, 1]: the digits of GRACE's `tool_failures(rate=…)`."""

    def hundredths(series: pl.Series) -> pl.Series:
        values = series.to_numpy().astype(np.float64, copy=False)
        return pl.Series(series.name, scaled_half_even(values, 2), dtype=pl.Int64)

    cents = expr.map_batches(hundredths, return_dtype=pl.Int64, is_elementwise=True)
    return pl.format("{}.{}", cents // 100, (cents % 100).cast(pl.String).str.zfill(2))
