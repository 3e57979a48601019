"""Exact rounding and division over columns against Python's round, format and `/`."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.confidence.exact import (
    divide,
    hundredths,
    round_half_even,
    scaled_half_even,
    two_decimals,
)

TIES_AND_NEAR_TIES = [
    0.4275,  # binary 0.42749999... -> 0.427 (Polars and numpy give 0.428)
    0.8995,  # binary 0.89949999... -> 0.899 (Polars and numpy give 0.9)
    0.6995,  # binary 0.69950000...01 -> 0.7
    0.0625,  # exact tie -> 0.062
    0.6875,  # exact tie -> 0.688
    0.5625,  # exact tie -> 0.562
    0.6412500000000001,
    0.9250000000000002,
    0.0005,
    0.00049999999999999,
    0.0,
    1.0,
    2.0**-1074,
]


def rounded(values: list[float], decimals: int) -> list[float]:
    frame = pl.DataFrame({"x": values}, schema={"x": pl.Float64})
    return frame.select(round_half_even(pl.col("x"), decimals))["x"].to_list()


@pytest.mark.parametrize("decimals", [0, 1, 2, 3])
def test_ties_and_near_ties_round_as_python(decimals: int) -> None:
    assert rounded(TIES_AND_NEAR_TIES, decimals) == [round(x, decimals) for x in TIES_AND_NEAR_TIES]


def test_every_sixteenth_and_two_thousandth() -> None:
    values = [k / 16 for k in range(17)] + [k / 2000 for k in range(2001)]
    assert rounded(values, 3) == [round(x, 3) for x in values]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=50), st.integers(0, 3))
def test_random_values_round_as_python(values: list[float], decimals: int) -> None:
    assert rounded(values, decimals) == [round(x, decimals) for x in values]


def test_hundredths_give_format_two_decimals() -> None:
    rates = [0.0, 0.005, 0.125, 0.375, 0.5, 2 / 3, 0.75, 0.995, 0.999, 1.0]
    rates += np.random.default_rng(0).random(2000).tolist()
    frame = pl.DataFrame({"rate": rates})
    digits = frame.select(hundredths(pl.col("rate")))["rate"].to_list()
    assert [two_decimals(k) for k in digits] == [format(r, ".2f") for r in rates]


def test_nulls_and_non_finite_values_give_null() -> None:
    frame = pl.DataFrame({"x": [0.4275, None, float("nan"), float("inf")]})
    assert frame.select(round_half_even(pl.col("x"), 3))["x"].to_list() == [
        0.427,
        None,
        None,
        None,
    ]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_divide_is_pythons_division_even_by_a_constant(engine: str) -> None:
    # Polars divides by a constant as a product with its reciprocal: 0.5525 / 1.3 would be
    # 0.42499999999999993; Python says 0.425.
    rng = np.random.default_rng(1)
    tops = [0.5525, *rng.random(5000).tolist()]
    frame = pl.DataFrame({"top": tops, "bottom": 1.3, "count": 3, "none": None})
    got = (
        frame.lazy()
        .select(
            by_column=divide(pl.col("top"), pl.col("bottom")),
            by_literal=divide(pl.col("top"), pl.lit(1.3)),
            by_int=divide(pl.col("top"), pl.col("count")),
            by_null=divide(pl.col("top"), pl.col("none")),
        )
        .collect(engine=engine)  # type: ignore[arg-type]
    )
    assert got["by_column"].to_list() == [t / 1.3 for t in tops]
    assert got["by_literal"].to_list() == [t / 1.3 for t in tops]
    assert got["by_int"].to_list() == [t / 3 for t in tops]
    assert got["by_column"][0] == 0.425
    assert got["by_null"].null_count() == len(tops)


def test_more_than_three_decimals_is_refused() -> None:
    with pytest.raises(ValueError, match=r"decimals must lie in \[0, 3\]"):
        scaled_half_even(np.array([0.5]), 4)
