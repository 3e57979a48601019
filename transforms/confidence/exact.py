"""Python's float arithmetic over whole columns, bit for bit, where Polars does otherwise.

Rounding. GRACE rounds every step score with Python's `round(score, 3)`: the exact binary
value of the double is rounded to 3 decimals, ties to even, and the result is the double
nearest to that decimal. Polars' and numpy's `round` scale by 10**d in floating point first,
which moves values such as 0.4275 (binary 0.42749999...) or 0.8995 across the half, so they
disagree with Python on some inputs. Here the scaling is done in 64-bit integers on the
double's exact mantissa: x = M * 2**(e - 53) exactly, so x * 10**d = M * 10**d * 2**(e - 53),
and the integer part and the remainder against the half are exact. M < 2**53 and
10**3 < 2**10, so M * 10**d fits in 63 bits for d <= 3.

Division. Polars divides a column by a scalar (a literal, `pl.len()`, or in the streaming
engine any column that is constant over a morsel) as a multiplication by the reciprocal,
which is not the correctly rounded quotient (0.5525 / 1.3 gives 0.42499999999999993 instead of
Python's 0.425). `divide` divides in numpy, which rounds every quotient correctly, as Python's
`/` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["divide", "hundredths", "round_half_even", "scaled_half_even", "two_decimals"]

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


def _on_values(
    series: pl.Series,
    compute: Callable[[npt.NDArray[np.float64]], npt.NDArray[Any]],
    dtype: pl.DataType,
) -> pl.Series:
    """`compute` over the finite values of `series`; nulls stay null and other values (NaN,
    infinities) become null. Polars hands a `when(...).then(...)` branch its rows with the
    others nulled, so nulls do arrive here."""
    values = series.cast(pl.Float64).to_numpy()
    finite = np.isfinite(values)
    out = pl.Series(series.name, compute(np.where(finite, values, 0.0)), dtype=dtype)
    if finite.all():
        return out
    return out.scatter(np.flatnonzero(~finite), None)


def round_half_even(expr: pl.Expr, decimals: int) -> pl.Expr:
    """`expr` rounded exactly as Python's round(x, decimals) rounds each value (values with
    |x| < 2**40; nulls and non-finite values give null)."""
    return expr.map_batches(
        lambda s: _on_values(s, lambda v: _round_array(v, decimals), pl.Float64()),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def hundredths(expr: pl.Expr) -> pl.Expr:
    """round(|x| * 100) exactly, ties to even, as Int64: the digits format(x, ".2f") prints for
    x in [0, 1] are those of hundredths // 100 and hundredths % 100."""
    return expr.map_batches(
        lambda s: _on_values(s, lambda v: scaled_half_even(v, 2), pl.Int64()),
        return_dtype=pl.Int64,
        is_elementwise=True,
    )


def two_decimals(hundredths: int) -> str:
    """format(x, ".2f") of a non-negative x whose `hundredths` are given."""
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def divide(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """numerator / denominator as Python's `/` on floats (and ints, converted first): the
    correctly rounded quotient, whatever Polars would make of a constant denominator. A null
    on either side gives null; callers keep zero denominators out, as Python raises on them."""

    def quotient(pair: pl.Series) -> pl.Series:
        parts = pair.struct.unnest()
        top, bottom = parts.to_series(0), parts.to_series(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = top.cast(pl.Float64).to_numpy() / bottom.cast(pl.Float64).to_numpy()
        out = pl.Series(pair.name, values, dtype=pl.Float64)
        missing = (top.is_null() | bottom.is_null()).to_numpy()
        return out.scatter(np.flatnonzero(missing), None) if missing.any() else out

    return pl.struct(numerator.alias("n"), denominator.alias("d")).map_batches(
        quotient, return_dtype=pl.Float64, is_elementwise=True
    )
