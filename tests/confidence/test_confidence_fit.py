"""`tracegrade confidence --fit LABELS --out profile.toml` (issue 42, must-have 2): level
thresholds (and with --fit-weights the factor weights first) fitted to labels, cross-validated
so that no fold's labels choose its own cuts or weights, and written as a profile a run takes
with --config and names in its report."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from storage.confidence.labels import labelled_trace_rows
from storage.store.duckdb_store import DuckDBStore
from tracegrade.cli import main
from tracegrade.demo import write_demo_archive
from transforms.confidence.fitting import (
    DEFAULT_CUTS,
    MIN_LEVEL_SHARE,
    WEIGHT_CANDIDATES,
    confidence_auc,
    cross_validate,
    cross_validate_weights,
    fit_cuts,
    fit_weights,
    fold_assignment,
    level_figures,
    levels_of,
)
from transforms.confidence.level_agreement import roc_auc
from transforms.confidence.reweighted import ReweightedConfidence
from transforms.config.confidence import ConfidenceConfig, ConfidenceWeights


def _labelled(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidences that carry a signal: good traces' run higher, with much overlap."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.45).astype(np.int64)
    scores = np.clip(0.55 + 0.12 * labels + rng.normal(0, 0.12, n), 0, 1).round(3)
    return scores, labels


def test_shuffled_labels_give_a_cross_validated_auc_near_one_half() -> None:
    scores, labels = _labelled(3_000, 1)
    shuffled = np.random.default_rng(2).permutation(labels)

    honest = cross_validate(scores, labels, folds=5, seed=0)
    blind = cross_validate(scores, shuffled, folds=5, seed=0)

    assert honest.fitted.auc > 0.65
    # fitted on noise, the in-sample cuts would look better than chance; out of fold they do not
    assert abs(blind.fitted.auc - 0.5) < 0.04
    in_sample = level_figures(levels_of(scores, fit_cuts(scores, shuffled)), shuffled)
    assert in_sample.auc > blind.fitted.auc


def test_fitted_cuts_use_every_level_and_order_the_failure_rates() -> None:
    scores, labels = _labelled(2_000, 3)
    cuts = fit_cuts(scores, labels)
    figures = level_figures(levels_of(scores, cuts), labels)

    assert cuts != DEFAULT_CUTS and cuts[0] > cuts[1] > cuts[2]
    assert min(figures.traces) >= MIN_LEVEL_SHARE * len(scores)
    assert figures.rates_rise
    defaults = level_figures(levels_of(scores, DEFAULT_CUTS), labels)
    assert figures.auc > defaults.auc


def test_level_auc_counts_ties_half() -> None:
    levels = np.array([0, 0, 1, 3, 3, 1])
    labels = np.array([1, 0, 1, 0, 1, 0])
    # good calmer than failed: pairs (good level, failed level) over 3 x 3
    pairs = [(g, f) for g in (0, 1, 3) for f in (0, 3, 1)]
    wanted = sum(1.0 if g < f else 0.5 if g == f else 0.0 for g, f in pairs) / 9
    assert level_figures(levels, labels).auc == pytest.approx(wanted)


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    """600 demo traces scored (derived levels, no embedder), labelled by metadata.success."""
    write_demo_archive(tmp_path / "archive", n_traces=600, days=4)
    db = tmp_path / "demo.duckdb"
    assert main(["score", str(tmp_path / "archive"), "--db", str(db), "--no-embedder"]) in (0, 1)
    return db


def test_fit_writes_a_profile_a_run_names(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = demo_db
    profile = tmp_path / "profile.toml"
    capsys.readouterr()

    argv = ["confidence", "--db", str(db), "--fit", "success::INT", "--out", str(profile)]
    assert main([*argv, "--folds", "4", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "Cross-validation: 4 folds, seed 3" in out
    assert "| fitted (out of fold) |" in out and "| defaults |" in out
    written = tomllib.loads(profile.read_text(encoding="utf-8"))["confidence"]
    config = ConfidenceConfig.model_validate(written)
    assert str(config.profile).startswith("fitted on success::INT")
    assert config.config_hash == ConfidenceConfig(thresholds=config.thresholds).config_hash

    assert main(["confidence", "--db", str(db), "--config", str(profile), "--no-embedder"]) == 0
    report = capsys.readouterr().out
    assert f"Level thresholds: the profile {config.profile!r}" in report
    assert main(["confidence", "--db", str(db), "--fit", "success::INT", "--folds", "400"]) == 1
    assert "at least 800" in capsys.readouterr().err


class _Mixed:
    """A scorer of two signals per trace mixed by the weights tool_success and
    query_coverage (llm_self_eval, counted nowhere, must not move); labels follow the second
    signal only."""

    def __init__(self, n: int, seed: int, shuffle: bool = False) -> None:
        rng = np.random.default_rng(seed)
        self.noise, self.signal = rng.random(n), rng.random(n)
        labels = (self.signal + rng.normal(0, 0.25, n) > 0.5).astype(np.int64)
        self.labels = rng.permutation(labels) if shuffle else labels

    def __call__(self, weights: dict[str, float]) -> np.ndarray:
        a, b = weights["tool_success"], weights["query_coverage"]
        return ((a * self.noise + b * self.signal) / (a + b)).round(3)


_START = {"tool_success": 0.4, "query_coverage": 0.1, "llm_self_eval": 0.3}


def test_confidence_auc_counts_ties_half_as_roc_auc_does() -> None:
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 6, 300) / 5
    labels = (rng.random(300) < 0.4).astype(np.int64)
    assert confidence_auc(scores, labels) == pytest.approx(roc_auc(scores, labels))
    assert np.isnan(confidence_auc(scores, np.ones(300, dtype=np.int64)))


def test_the_weight_search_finds_the_weight_that_carries_the_labels() -> None:
    mixed = _Mixed(2_000, 7)
    fitted = fit_weights(mixed, mixed.labels, _START)

    assert fitted["query_coverage"] / fitted["tool_success"] >= 4  # the signal outweighs noise
    assert fitted["llm_self_eval"] == _START["llm_self_eval"]  # nothing to tell: kept
    before = confidence_auc(mixed(_START), mixed.labels)
    assert confidence_auc(mixed(fitted), mixed.labels) > before + 0.05
    assert fitted["tool_success"] > 0  # never 0: every step counts it
    assert set(fitted.values()) <= {*WEIGHT_CANDIDATES, *_START.values()}


def test_weights_cross_validated_never_see_their_fold() -> None:
    mixed = _Mixed(600, 8)
    fold_of = fold_assignment(600, 5, 4)
    flipped = mixed.labels.copy()
    flipped[fold_of == 0] = 1 - flipped[fold_of == 0]  # only fold 0's labels differ

    first = cross_validate_weights(mixed, mixed.labels, _START, folds=5, seed=4)
    second = cross_validate_weights(mixed, flipped, _START, folds=5, seed=4)

    assert first.fold_weights[0] == second.fold_weights[0]
    assert first.fold_cuts[0] == second.fold_cuts[0]
    assert first.fold_weights[1:] != second.fold_weights[1:] or first.weights != second.weights


def test_weights_fitted_on_shuffled_labels_separate_nothing_out_of_fold() -> None:
    honest = _Mixed(3_000, 9)
    blind = _Mixed(3_000, 9, shuffle=True)

    fit = cross_validate_weights(honest, honest.labels, _START, folds=5, seed=0)
    noise = cross_validate_weights(blind, blind.labels, _START, folds=5, seed=0)

    assert fit.fitted_confidence_auc > fit.configured_confidence_auc + 0.05
    assert fit.fitted.auc > fit.defaults.auc
    assert abs(noise.fitted_confidence_auc - 0.5) < 0.04
    assert abs(noise.fitted.auc - 0.5) < 0.04


def test_fit_weights_writes_weights_a_run_applies(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = demo_db
    profile = tmp_path / "profile.toml"
    with DuckDBStore(str(db), read_only=True) as store:
        rows, unlabelled = labelled_trace_rows(store, "success::INT")
        stored = store.sql(
            "SELECT trace_id, aggregate FROM confidence_traces WHERE source = 'derived' "
            "ORDER BY trace_id"
        )
    # the traces scored again under the configured weights are the stored levels, exactly
    score = ReweightedConfidence(rows.drop("label"), ConfidenceConfig())
    by_id = dict(zip(stored["trace_id"], stored["aggregate"], strict=True))
    assert score(score.configured).tolist() == [by_id[t] for t in rows["trace_id"]]
    capsys.readouterr()

    argv = ["confidence", "--db", str(db), "--fit", "success::INT", "--fit-weights"]
    assert main([*argv, "--out", str(profile)]) == 0
    out = capsys.readouterr().out
    assert "| factor weight | fitted on all | configured |" in out
    assert f"unlabelled, left out: {unlabelled:,}" in out
    config = ConfidenceConfig.model_validate(
        tomllib.loads(profile.read_text(encoding="utf-8"))["confidence"]
    )
    assert config.weights != ConfidenceWeights()  # the demo's labels move them
    fitted = config.weights.model_dump()
    assert confidence_auc(score(fitted), rows["label"].to_numpy()) > confidence_auc(
        score(score.configured), rows["label"].to_numpy()
    )

    assert main(["confidence", "--db", str(db), "--config", str(profile), "--no-embedder"]) == 0
    report = capsys.readouterr().out
    assert "Factor weights: " in report and f"the profile {config.profile!r}" in report
    with DuckDBStore(str(db), read_only=True) as store:
        applied = store.sql(
            "SELECT trace_id, aggregate FROM confidence_traces WHERE source = 'derived' "
            "ORDER BY trace_id"
        )
    by_id = dict(zip(applied["trace_id"], applied["aggregate"], strict=True))
    assert score(fitted).tolist() == [by_id[t] for t in rows["trace_id"]]

    assert main([*argv, "--source", "factors"]) == 2
    assert "--fit-weights fits derived mode's weights" in capsys.readouterr().err
    assert main(["confidence", "--db", str(db), "--fit-weights"]) == 2  # not a scoring run
    assert "--fit-weights goes with --fit LABELS" in capsys.readouterr().err


def test_tool_success_cannot_weigh_nothing() -> None:
    with pytest.raises(ValueError, match="tool_success"):
        ConfidenceWeights(tool_success=0.0)
    assert ConfidenceWeights(query_coverage=0.0).query_coverage == 0.0  # left out of the mean
