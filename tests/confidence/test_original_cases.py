"""Hand-worked cases of GRACE's calculator, through the object API and the batch path.

Every expected value below is worked out from the original's formulas
(nakashima2toshio/gemini_grace_agent, grace/confidence.py at commit ceb06343:
`_calc_search_quality`, `_calc_tool_success`, `calculate`, `_apply_penalties`, `decide_action`,
`ConfidenceAggregator`), not from tracegrade's code. Notation: SQ search quality, TS tool
success, SA source agreement, LLM self-confidence, QC query coverage, cnt/avg/max/var the
search fields, sc source_count, exec/succ the tool counts, rate tool_success_rate. Fields not
listed take the original's defaults (cnt 0, avg 0, max 0, var 1.0, SA 0, sc 0, LLM 0.5,
rate 1.0, exec 0, succ 0, QC 0, non-search). Levels use 0.9 / 0.7 / 0.4, each inclusive.

The formulas, as the original writes them:
  SQ = 0 if cnt == 0 and max == 0; max if max >= 0.6;
       else max(0, (max * 0.7 + avg * 0.3) - min(0.15, var * 0.3))
  TS = rate if exec == 0 else succ / exec
  search step: base = SQ, times TS when TS < 1
  other step:  base = sum(value * w) / sum(w), summed in the order SQ (0.6, when SQ > 0),
               TS (0.4, always), SA (0.2, when sc > 1), LLM (0.3, when > 0.6),
               QC (0.1, when > 0.1)
  penalties, in turn: x0.5 `no_search_results` (search step, cnt 0);
               x(0.8 + 0.2 rate) `tool_failures(rate=…)` (rate < 1, two decimals);
               x0.7 `no_sources` (sc 0; exempt: a search step with cnt > 0, or another
               step with LLM >= 0.8)
  score = round(min(1, max(0, s)), 3)

Floors of the non-search mean, each case below, at and above: SQ 0 (it is never below: a
negative blend is floored to 0, N3), source_count 1 (N1, N4, N5), LLM 0.6 (N1, N6, N7),
QC 0.1 (N10, N11, N12); TS has none. Penalties and exemptions: no_search_results S6, S7;
tool_failures S8, S10, N14-N18; no_sources S6, S7, N1; exempt as a search with results S2,
by self-confidence N9 (not at 0.79, N8). Rounding at a half: S14, S15 (exact ties), S10, S12
(just below), S13, N23 (just above).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import polars as pl
import pytest

from transforms.confidence import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
    step_scores,
    trace_levels,
)
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.config.confidence import ConfidenceConfig

SILENT, NOTIFY, CONFIRM, ESCALATE = (
    InterventionLevel.SILENT,
    InterventionLevel.NOTIFY,
    InterventionLevel.CONFIRM,
    InterventionLevel.ESCALATE,
)
SEARCH = {"is_search_step": True}

CASES = [
    # --- search steps -------------------------------------------------------------------
    # SQ: max .85 >= .6 -> .85. TS = 1/1 = 1, not < 1 -> base .85. No penalty: cnt 5,
    # rate 1.0, sc 2.
    ("S1 search, best score alone, no tool failure",
     dict(SEARCH, search_result_count=5, search_avg_score=0.72, search_max_score=0.85,
          search_score_variance=0.004, source_count=2, tool_execution_count=1,
          tool_success_count=1),
     0.85, (), NOTIFY),
    # max .6 >= .6 (inclusive) -> SQ .6; TS = rate 1.0; sc 0 but a search step with cnt 3 > 0
    # is exempt from no_sources.
    ("S2 search, best score at 0.6, no_sources exemption",
     dict(SEARCH, search_result_count=3, search_avg_score=0.5, search_max_score=0.6,
          search_score_variance=0.01),
     0.6, (), CONFIRM),
    # max .55 < .6: .55*.7 + .45*.3 = .385 + .135 = .52; vpen = min(.15, .01*.3) = .003;
    # SQ = .517.
    ("S3 search, blend below 0.6",
     dict(SEARCH, search_result_count=3, search_avg_score=0.45, search_max_score=0.55,
          search_score_variance=0.01, source_count=1),
     0.517, (), CONFIRM),
    # .5*.7 + .3*.3 = .35 + .09 = .44; vpen = min(.15, .8*.3 = .24) = .15 (the cap);
    # SQ = .29 (binary 0.2899999999999999) -> round .29.
    ("S4 search, variance penalty capped at 0.15",
     dict(SEARCH, search_result_count=4, search_avg_score=0.3, search_max_score=0.5,
          search_score_variance=0.8, source_count=1),
     0.29, (), ESCALATE),
    # var takes its default 1.0: .1*.7 + .05*.3 = .085; vpen = min(.15, .3) = .15;
    # .085 - .15 < 0 -> SQ floored at 0.
    ("S5 search, blend floored at 0, default variance",
     dict(SEARCH, search_result_count=2, search_avg_score=0.05, search_max_score=0.1,
          source_count=1),
     0.0, (), ESCALATE),
    # cnt 0 and max 0 -> SQ 0 -> base 0; x.5 no_search_results; sc 0 and cnt 0: not exempt,
    # x.7 no_sources -> 0.
    ("S6 search without results: both penalties",
     dict(SEARCH),
     0.0, ("no_search_results", "no_sources"), ESCALATE),
    # cnt 0 but max .8 != 0: no short cut; .8 >= .6 -> SQ .8; x.5 = .4; cnt 0, so not exempt:
    # x.7 = .28.
    ("S7 search, count 0 but a best score",
     dict(SEARCH, search_avg_score=0.8, search_max_score=0.8),
     0.28, ("no_search_results", "no_sources"), ESCALATE),
    # SQ .9; TS = 3/4 = .75 < 1 -> base .675; rate .75 < 1: m = .8 + .2*.75 = .95
    # (binary .9500000000000001); .675*m = .6412500000000001 -> .641.
    ("S8 search with tool failures: counts and rate",
     dict(SEARCH, search_result_count=5, search_avg_score=0.8, search_max_score=0.9,
          search_score_variance=0.01, source_count=3, tool_success_rate=0.75,
          tool_execution_count=4, tool_success_count=3),
     0.641, ("tool_failures(rate=0.75)",), CONFIRM),
    # TS = 1/2 -> base .8*.5 = .4; rate stays 1.0 -> no tool_failures penalty; .4 >= .4.
    ("S9 search, failed execution without a rate: no penalty",
     dict(SEARCH, search_result_count=3, search_avg_score=0.7, search_max_score=0.8,
          source_count=2, tool_execution_count=2, tool_success_count=1),
     0.4, (), CONFIRM),
    # exec 0 -> TS = rate .5 -> base .95*.5 = .475; and m = .8 + .1 = .9: .475*.9 = .4275,
    # binary 0.42749999999999999... -> rounds down to .427 (Python's round on the binary).
    ("S10 search, rate counted twice, rounding just below a half",
     dict(SEARCH, search_result_count=2, search_avg_score=0.9, search_max_score=0.95,
          source_count=2, tool_success_rate=0.5),
     0.427, ("tool_failures(rate=0.50)",), CONFIRM),
    # SQ = max 1.2 as it is (not capped); the final clamp gives 1.0.
    ("S11 search, best score above 1 clamped at the end",
     dict(SEARCH, search_result_count=2, search_avg_score=1.1, search_max_score=1.2,
          source_count=2),
     1.0, (), SILENT),
    # SQ = .8995, binary 0.89949999999999996... -> .899: NOTIFY, not SILENT.
    ("S12 search, .8995 rounds down",
     dict(SEARCH, search_result_count=2, search_avg_score=0.8, search_max_score=0.8995,
          source_count=2),
     0.899, (), NOTIFY),
    # SQ = .6995, binary 0.69950000000000001... -> .7: NOTIFY.
    ("S13 search, .6995 rounds up",
     dict(SEARCH, search_result_count=2, search_avg_score=0.6, search_max_score=0.6995,
          source_count=2),
     0.7, (), NOTIFY),
    # SQ 1.0; TS = 11/16 = .6875 exactly -> base .6875, an exact binary half at the third
    # decimal: ties go to even -> .688.
    ("S14 search, exact half rounds to even (up)",
     dict(SEARCH, search_result_count=1, search_avg_score=1.0, search_max_score=1.0,
          search_score_variance=0.0, source_count=1, tool_execution_count=16,
          tool_success_count=11),
     0.688, (), CONFIRM),
    # TS = 9/16 = .5625 exactly -> tie -> even -> .562.
    ("S15 search, exact half rounds to even (down)",
     dict(SEARCH, search_result_count=1, search_avg_score=1.0, search_max_score=1.0,
          search_score_variance=0.0, source_count=1, tool_execution_count=16,
          tool_success_count=9),
     0.562, (), CONFIRM),
    # A search step's base is SQ alone: LLM .99 and QC .99 change nothing -> .9.
    ("S16 search ignores self-confidence and coverage",
     dict(SEARCH, search_result_count=1, search_avg_score=0.9, search_max_score=0.9,
          search_score_variance=0.0, source_count=1, llm_self_confidence=0.99,
          query_coverage=0.99),
     0.9, (), SILENT),
    # --- non-search steps ---------------------------------------------------------------
    # Every default: SQ 0 (cnt 0, max 0) left out; TS = rate 1.0 always in: .4/.4 = 1;
    # sc 0 not > 1; LLM .5 not > .6; QC 0 not > .1. sc 0 and LLM .5 < .8 -> x.7 = .7.
    ("N1 every default",
     dict(),
     0.7, ("no_sources",), NOTIFY),
    # SQ .85 (> 0, in at .6); TS 1 (.4); sc 3 > 1 -> SA 1.0 (.2):
    # (.51 + .4 + .2) / 1.2 = 1.11/1.2 = .9250000000000002 -> .925.
    ("N2 search quality above its floor, source agreement in",
     dict(search_result_count=1, search_avg_score=0.85, search_max_score=0.85,
          source_count=3, source_agreement=1.0, tool_execution_count=1, tool_success_count=1),
     0.925, (), SILENT),
    # SQ: .1*.7 + .05*.3 - .15 < 0 -> 0, not > 0: left out. TS alone -> 1.0; sc 1 -> no
    # penalty.
    ("N3 search quality at its floor (0) is left out",
     dict(search_result_count=2, search_avg_score=0.05, search_max_score=0.1, source_count=1),
     1.0, (), SILENT),
    # SQ = .5*.7 + .5*.3 - min(.15, 1.0*.3) = .35; SA left out (sc 1):
    # (.35*.6 + .4) / (.6 + .4) = .61.
    ("N4 source count at its floor (1): agreement left out",
     dict(search_result_count=1, search_avg_score=0.5, search_max_score=0.5, source_count=1,
          source_agreement=1.0, tool_execution_count=1, tool_success_count=1),
     0.61, (), CONFIRM),
    # sc 2 > 1: SA joins even at 0: (.4 + 0*.2) / (.4 + .2) = .4/.6000000000000001
    # = .6666666666666666 -> .667.
    ("N5 source count above its floor: agreement 0 still counts",
     dict(source_count=2, source_agreement=0.0),
     0.667, (), CONFIRM),
    # LLM .6 not > .6: TS alone 1.0; sc 0 and .6 < .8 -> x.7.
    ("N6 self-confidence at its floor (0.6) is left out",
     dict(llm_self_confidence=0.6),
     0.7, ("no_sources",), NOTIFY),
    # LLM .61 > .6: (.4 + .61*.3) / (.4 + .3) = .583/.7 = .8328571428571429;
    # .61 < .8 -> x.7 = .583.
    ("N7 self-confidence above its floor, below the exemption",
     dict(llm_self_confidence=0.61),
     0.583, ("no_sources",), CONFIRM),
    # (.4 + .79*.3)/.7 = .637/.7 = .91; .79 < .8 -> x.7 = .637.
    ("N8 self-confidence 0.79: no exemption",
     dict(llm_self_confidence=0.79),
     0.637, ("no_sources",), CONFIRM),
    # (.4 + .24)/.7 = .9142857142857143; .8 >= .8 -> exempt from no_sources -> .914.
    ("N9 self-confidence 0.8: exempt from no_sources",
     dict(llm_self_confidence=0.8),
     0.914, (), SILENT),
    # QC .05 not > .1: TS alone 1.0 (sc 1).
    ("N10 coverage below its floor",
     dict(query_coverage=0.05, source_count=1),
     1.0, (), SILENT),
    # QC .1 not > .1: left out -> 1.0.
    ("N11 coverage at its floor (0.1)",
     dict(query_coverage=0.1, source_count=1),
     1.0, (), SILENT),
    # QC .11 > .1: (.4 + .11*.1) / (.4 + .1) = .411/.5 = .822.
    ("N12 coverage above its floor",
     dict(query_coverage=0.11, source_count=1),
     0.822, (), NOTIFY),
    # SQ .9; TS 1; SA .8; LLM .9; QC .95:
    # (.54 + .4 + .16 + .27 + .095) / (.6 + .4 + .2 + .3 + .1) = 1.465/1.6 = .915625 -> .916.
    ("N13 every factor in",
     dict(search_result_count=5, search_avg_score=0.8, search_max_score=0.9,
          search_score_variance=0.01, source_count=3, source_agreement=0.8,
          llm_self_confidence=0.9, query_coverage=0.95),
     0.916, (), SILENT),
    # TS = rate .5: (.5*.4 + .7*.2 + .9*.3) / (.4 + .2 + .3) = .61/.9000000000000001
    # = .6777...; x(.8 + .2*.5 = .9) = .61.
    ("N14 tool failures on a non-search step",
     dict(source_count=2, source_agreement=0.7, llm_self_confidence=0.9,
          tool_success_rate=0.5),
     0.61, ("tool_failures(rate=0.50)",), CONFIRM),
    # TS = rate 0 -> base 0; x.8; sc 0 -> x.7 -> 0.
    ("N15 rate 0: tool_failures and no_sources",
     dict(tool_success_rate=0.0),
     0.0, ("tool_failures(rate=0.00)", "no_sources"), ESCALATE),
    # base .125; m = .8 + .025 = .825 -> .103125 -> .103. The name: .125 is an exact binary
    # tie at two decimals -> even -> 0.12.
    ("N16 rate 0.125 names 0.12 (tie to even)",
     dict(source_count=1, tool_success_rate=0.125),
     0.103, ("tool_failures(rate=0.12)",), ESCALATE),
    # base .375; m = .8 + .075 = .875 -> .328125 -> .328. Name: .375 tie -> even -> 0.38.
    ("N17 rate 0.375 names 0.38 (tie to even)",
     dict(source_count=1, tool_success_rate=0.375),
     0.328, ("tool_failures(rate=0.38)",), ESCALATE),
    # base .005; m = .801 -> .004005 -> .004. Name: .005 is binary 0.00500000000000000010...
    # (above the half) -> 0.01.
    ("N18 rate 0.005 names 0.01",
     dict(source_count=1, tool_success_rate=0.005),
     0.004, ("tool_failures(rate=0.01)",), ESCALATE),
    # TS = 3/4 = .75 alone -> .75; rate 1.0 -> no tool_failures penalty.
    ("N19 failed executions without a rate: no penalty",
     dict(tool_execution_count=4, tool_success_count=3, source_count=1),
     0.75, (), NOTIFY),
    # TS = 2/1 = 2.0 -> base 2.0 -> clamped to 1.0.
    ("N20 more successes than executions clamps",
     dict(tool_execution_count=1, tool_success_count=2, source_count=1),
     1.0, (), SILENT),
    # cnt 0 but max .65: SQ .65 (> 0, in); LLM .79 > .6, in:
    # (.39 + .4 + .237)/1.3 = .79; .79 < .8 -> x.7 = .553.
    ("N21 non-search, count 0 with a best score",
     dict(search_max_score=0.65, llm_self_confidence=0.79),
     0.553, ("no_sources",), CONFIRM),
    # TS, SA, LLM, QC in: (.4 + .1 + .21 + .05) / 1.0000000000000002 (the float sum
    # .4 + .2 + .3 + .1) -> .76.
    ("N22 weights summing to 1.0000000000000002",
     dict(source_count=2, source_agreement=0.5, llm_self_confidence=0.7, query_coverage=0.5),
     0.76, (), NOTIFY),
    # A reasoning step inheriting .535 (cnt 1, var 1.0): SQ = .3745 + .1605 - .15 = .385;
    # (.231 + .4 + .2)/1.2 = .6925, binary 0.69250000000000000444 (above the half) -> .693.
    ("N23 inherited score, rounding just above a half",
     dict(search_result_count=1, search_avg_score=0.535, search_max_score=0.535,
          source_count=3, source_agreement=1.0, tool_execution_count=1, tool_success_count=1),
     0.693, (), CONFIRM),
]  # fmt: skip


def case_inputs(label: str) -> dict[str, Any]:
    """The factors of the hand-worked case `label` (S1, N3, ...)."""
    return next(inputs for name, inputs, *_ in CASES if name.split()[0] == label)


ENGINES = ("in-memory", "streaming")


def batch_result(inputs: dict[str, Any], engine: str = "in-memory") -> dict[str, Any]:
    """The batch path on one step: its row of step_scores and its trace's level."""
    config = ConfidenceConfig(aggregation="mean")
    row = {"trace_id": "t", "step_index": 0, **inputs}
    frame = pl.DataFrame([row], schema=FACTOR_SCHEMA).lazy()
    steps = step_scores(frame, config).collect(engine=engine)  # type: ignore[call-overload]
    levels = trace_levels(steps.lazy(), config).collect(engine=engine)  # type: ignore[call-overload]
    return {**steps.row(0, named=True), "level": levels["level"][0]}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("inputs", "score", "penalties", "level"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_hand_worked_case(
    inputs: dict[str, Any],
    score: float,
    penalties: tuple[str, ...],
    level: InterventionLevel,
    engine: str,
) -> None:
    calculator = ConfidenceCalculator()
    result = calculator.calculate(ConfidenceFactors(**inputs))
    assert (result.score, result.penalties_applied) == (score, penalties)
    assert calculator.decide_action(result).level is level
    batch = batch_result(inputs, engine)
    assert (batch["score"], tuple(batch["penalties"]), batch["level"]) == (
        score,
        penalties,
        level.value,
    )
    for name in ("search_quality", "tool_success"):
        assert batch[name] == result.breakdown[name]


def test_every_default_is_the_original_one() -> None:
    # grace/confidence.py lines 32-53: the fields, in this order, with these defaults.
    assert [(f.name, f.default) for f in fields(ConfidenceFactors)] == [
        ("search_result_count", 0),
        ("search_avg_score", 0.0),
        ("search_max_score", 0.0),
        ("search_score_variance", 1.0),
        ("source_agreement", 0.0),
        ("source_count", 0),
        ("llm_self_confidence", 0.5),
        ("tool_success_rate", 1.0),
        ("tool_execution_count", 0),
        ("tool_success_count", 0),
        ("query_coverage", 0.0),
        ("is_search_step", False),
    ]
    nulls = {name: None for name in FACTOR_SCHEMA if name not in ("trace_id", "step_index")}
    assert batch_result(nulls)["score"] == 0.7  # N1: a row of nulls takes the same defaults


def test_breakdown_is_the_original_one() -> None:
    # S4: SQ .2899999999999999 unrounded; a search step shows LLM and QC as 0.
    factors = case_inputs("S4") | {"llm_self_confidence": 0.9, "query_coverage": 0.5}
    result = ConfidenceCalculator().calculate(ConfidenceFactors(**factors))
    original = {k: result.breakdown[k] for k in list(result.breakdown)[:5]}
    assert original == {
        "search_quality": 0.2899999999999999,
        "source_agreement": 0.0,
        "llm_self_eval": 0.0,
        "tool_success": 1.0,
        "query_coverage": 0.0,
    }
    assert result.breakdown["base"] == 0.2899999999999999


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (1.0, SILENT),
        (0.9, SILENT),
        (0.899, NOTIFY),
        (0.7, NOTIFY),
        (0.699, CONFIRM),
        (0.4, CONFIRM),
        (0.399, ESCALATE),
        (0.0, ESCALATE),
    ],
)
def test_decide_action_boundaries(score: float, level: InterventionLevel) -> None:
    # decide_action: score >= silent, elif >= notify, elif >= confirm, else ESCALATE.
    assert ConfidenceCalculator().decide_action(ConfidenceScore(score)).level is level


def scores(*values: float) -> list[ConfidenceScore]:
    return [ConfidenceScore(v) for v in values]


@pytest.mark.parametrize(
    ("method", "values", "expected"),
    [
        # sum() left to right: (.8 + .6) + .7 = 2.0999999999999996; /3
        ("mean", (0.8, 0.6, 0.7), 0.6999999999999998),
        ("mean", (0.7, 0.7), 0.7),  # 1.4/2
        ("mean", (0.5, 0.9), 0.7),  # 1.4/2
        ("min", (0.8, 0.6, 0.7), 0.6),
        # (.8*1 + .6*2 + .7*3)/6 = 4.1/6 (sums left to right) = .6833333333333332
        ("weighted", (0.8, 0.6, 0.7), 0.6833333333333332),
        # (.7 + 1.4)/3 = 2.0999999999999996/3
        ("weighted", (0.7, 0.7), 0.6999999999999998),
        ("weighted", (0.5, 0.9), 0.7666666666666666),  # (.5 + 1.8)/3 = 2.3/3
        # aggregate_with_critical_check: .2 < .3 -> mean .5 x .7 = .35
        ("critical_check", (0.8, 0.2), 0.35),
        # .3 is not < .3 -> the mean .55
        ("critical_check", (0.8, 0.3), 0.55),
    ],
)
def test_aggregator(method: str, values: tuple[float, ...], expected: float) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    assert ConfidenceAggregator(config).aggregate(scores(*values), method) == expected
    rows = pl.DataFrame(
        {"trace_id": "t", "step_index": range(len(values)), "score": values, "penalty_code": 0}
    )
    for ordered in (False, True):
        (trace,) = (
            trace_levels(rows.lazy(), config, ordered=ordered).collect().iter_rows(named=True)
        )
        assert trace["aggregate"] == expected


def test_critical_check_returns_the_flag_and_nothing_gives_zero() -> None:
    aggregator = ConfidenceAggregator()
    assert aggregator.aggregate_with_critical_check(scores(0.8, 0.2)) == (0.35, True)
    assert aggregator.aggregate_with_critical_check(scores(0.8, 0.3)) == (0.55, False)
    assert aggregator.aggregate_with_critical_check([]) == (0.0, False)
    # `if not scores: return 0.0` comes before the method is looked at, even "bogus"
    assert aggregator.aggregate([], "bogus") == 0.0


def test_the_one_departure_an_aggregate_within_1e_12_reaches_the_threshold() -> None:
    # weighted [.7, .7] = .6999999999999998: the original says CONFIRM (< .7), tracegrade NOTIFY.
    aggregate = ConfidenceAggregator().aggregate(scores(0.7, 0.7), "weighted")
    assert aggregate == 0.6999999999999998
    assert ConfidenceCalculator().decide_action(ConfidenceScore(aggregate)).level is NOTIFY
    assert ConfidenceCalculator().decide_action(ConfidenceScore(0.7 - 2e-12)).level is CONFIRM
    rows = pl.DataFrame(
        {"trace_id": "t", "step_index": [0, 1], "score": [0.7, 0.7], "penalty_code": 0}
    )
    (trace,) = trace_levels(rows.lazy(), ConfidenceConfig()).collect().iter_rows(named=True)
    assert (trace["aggregate"], trace["level"]) == (0.6999999999999998, "NOTIFY")
