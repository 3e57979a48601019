"""`tracegrade confidence --fit LABELS --out profile.toml` (issue 42, must-have 2): level
thresholds fitted to labels, cross-validated so that no fold's labels choose its own cuts, and
written as a profile a run takes with --config and names in its report."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from tracegrade.cli import main
from tracegrade.demo import write_demo_archive
from transforms.confidence.fitting import (
    DEFAULT_CUTS,
    MIN_LEVEL_SHARE,
    cross_validate,
    fit_cuts,
    level_figures,
    levels_of,
)
from transforms.config.confidence import ConfidenceConfig


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


def test_fit_writes_a_profile_a_run_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_demo_archive(tmp_path / "archive", n_traces=600, days=4)
    db = tmp_path / "demo.duckdb"
    assert main(["score", str(tmp_path / "archive"), "--db", str(db), "--no-embedder"]) in (0, 1)
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
