"""`tracegrade judge --evaluate LABELS` (issue 42): the judge's agreement with labels people
gave, per metric and overall. The figures are checked against scipy's and scikit-learn's for
small labelled sets with ties and a constant metric, and the command against a database the
judge wrote (a FunctionModel scoring each answer as its text says)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from judge_helpers import items, judge_once, write_config
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from tracegrade.cli import main
from transforms.judge.agreement import agreement, cohen_kappa, ordinal_bins, spearman_rho

# ten answers: scores with ties, binary labels
SCORES = [90.0, 90.0, 75.0, 60.0, 50.0, 50.0, 40.0, 30.0, 20.0, 90.0]
BINARY = [1, 1, 1, 0, 1, 0, 0, 1, 0, 0]
ORDINAL = [5, 4, 4, 3, 3, 2, 2, 3, 1, 5]


def test_binary_figures_equal_scipy_and_scikit_learn() -> None:
    got = agreement("m", SCORES, BINARY, 50.0, (0.0, 1.0))

    assert got.rho == pytest.approx(spearmanr(SCORES, BINARY).statistic, abs=1e-12)
    assert got.auc == pytest.approx(roc_auc_score(BINARY, SCORES), abs=1e-12)
    passed = [int(s >= 50.0) for s in SCORES]
    assert got.kappa == pytest.approx(cohen_kappa_score(passed, BINARY), abs=1e-12)
    # the worked table: passed 7 (labels 1,1,1,0,1,0,0 -> 4 good, 3 bad), failed 3 (0,1,0)
    assert got.confusion == {"passed": [3, 4], "failed": [2, 1]}
    assert got.labelled == 10 and not got.weighted
    for key in ("rho", "auc", "kappa"):
        low, high = got.intervals[key]
        assert low <= getattr(got, key) <= high, key


def test_ordinal_labels_get_quadratic_weighted_kappa_on_the_label_scale() -> None:
    scale = (1.0, 2.0, 3.0, 4.0, 5.0)
    got = agreement("m", SCORES, ORDINAL, 50.0, scale)

    bins = ordinal_bins(SCORES, 5)  # 0-20 -> 1, ..., 80-100 -> 5
    assert bins.tolist() == [4, 4, 3, 3, 2, 2, 2, 1, 1, 4]
    wanted = cohen_kappa_score(bins, [v - 1 for v in ORDINAL], weights="quadratic")
    assert got.kappa == pytest.approx(wanted, abs=1e-12) and got.weighted
    assert got.rho == pytest.approx(spearmanr(SCORES, ORDINAL).statistic, abs=1e-12)
    assert got.auc is None  # not binary
    assert got.confusion["passed"] == [0, 1, 2, 2, 2]  # scores >= 50 by label 1..5
    assert got.confusion["failed"] == [1, 1, 1, 0, 0]


def test_a_constant_metric_has_no_rho_a_kappa_of_zero_and_auc_one_half() -> None:
    constant = [70.0] * 10
    got = agreement("m", constant, BINARY, 50.0, (0.0, 1.0))

    assert math.isnan(got.rho)
    assert got.auc == 0.5  # every good-bad pair tied
    passed = [1] * 10  # everyone passed: the agreement is all chance
    assert got.kappa == cohen_kappa_score(passed, BINARY) == 0.0
    assert math.isnan(spearman_rho(constant, BINARY))
    assert got.as_json()["spearman_rho"] is None


def test_kappa_of_perfect_and_of_opposite_ratings() -> None:
    assert cohen_kappa([0, 1, 1, 0], [0, 1, 1, 0], 2, False) == 1.0
    assert cohen_kappa([1, 0, 0, 1], [0, 1, 1, 0], 2, False) == -1.0
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    assert cohen_kappa(a, b, 4, True) == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12
    )


def test_the_same_input_gives_the_same_intervals() -> None:
    first = agreement("m", SCORES, BINARY, 50.0, (0.0, 1.0))
    assert agreement("m", SCORES, BINARY, 50.0, (0.0, 1.0)).intervals == first.intervals


ANSWERS = [(f"t{i:02d}", f"question {i}", f"answer scored {s}") for i, s in enumerate(SCORES)]


def _labels(tmp_path: Path, values: list[int], name: str = "labels.csv") -> Path:
    """A labels file of the answers' ids and `values` (as many as given, in order)."""
    path = tmp_path / name
    rows = [f"{item},{value}" for (item, _, _), value in zip(ANSWERS, values, strict=False)]
    path.write_text("trace_id,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _judged(tmp_path: Path, threshold: str = "") -> tuple[Path, Path]:
    """A database the judge filled: two metrics, each answer scored as its text says
    (Relevance the same score, Coverage 100 minus it)."""
    config = write_config(
        tmp_path,
        f'{threshold}[llm_default]\nmodel = "openai:gpt-5"\n'
        '[[metrics]]\nname = "Relevance"\nweight = 0.5\npass_threshold = 60\n'
        'system_instruction = "JUDGE-R: score the answer"\n'
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\n',
    )

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        said = " ".join(
            [str(getattr(m, "instructions", "")) for m in messages]
            + [str(getattr(part, "content", "")) for m in messages for part in m.parts]
        )
        score = float(re.findall(r"answer scored ([0-9.]+)", said)[0])
        value = score if "JUDGE-R" in said else 100 - score
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {"score": value, "comment": ""})],
            usage=RequestUsage(input_tokens=100, output_tokens=20),
        )

    model = FunctionModel(respond)
    db = tmp_path / "judged.duckdb"
    judge_once(db, config, items(ANSWERS), model=model)
    return db, config


def test_judge_evaluate_prints_each_metric_and_the_overall_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, config = _judged(tmp_path)
    labels = _labels(tmp_path, BINARY[:9])
    argv = ["judge", "--db", str(db), "--config", str(config), "--evaluate", str(labels)]

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| Relevance | 9 | 60 |" in out and "| Coverage | 9 | 50 |" in out
    assert "| overall | 9 | 50 |" in out
    assert "judged answers without one (left out): 1." in out

    assert main([*argv, "--json"]) == 0
    figures = {s["name"]: s for s in json.loads(capsys.readouterr().out)["scores"]}
    relevance = figures["Relevance"]
    assert relevance["auc"] == pytest.approx(roc_auc_score(BINARY[:9], SCORES[:9]))
    assert figures["Coverage"]["auc"] == pytest.approx(1 - relevance["auc"])
    passed = [int(s >= 60) for s in SCORES[:9]]
    assert relevance["kappa"] == pytest.approx(cohen_kappa_score(passed, BINARY[:9]))
    assert figures["overall"]["spearman_rho"] is None  # (s + 100 - s) / 2: constant


def test_judge_evaluate_refuses_labels_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, config = _judged(tmp_path)
    base = ["judge", "--db", str(db), "--config", str(config), "--evaluate"]
    half = tmp_path / "half.csv"
    half.write_text("id,label\nt01,0.5\nt02,1\n", encoding="utf-8")
    twice = tmp_path / "twice.csv"
    twice.write_text("id,label\nt01,0\nt01,1\n", encoding="utf-8")
    other = tmp_path / "other.csv"
    other.write_text("id,label\nx1,0\nx2,1\n", encoding="utf-8")

    assert main([*base, str(half)]) == 2
    assert "whole numbers" in capsys.readouterr().err
    assert main([*base, str(twice)]) == 2
    assert "labelled both 0 and 1" in capsys.readouterr().err
    assert main([*base, str(other)]) == 1
    assert "none of the 10 judged answers has a label" in capsys.readouterr().err
    assert main(["judge", "--db", str(db), "--json"]) == 2


def test_pass_threshold_is_not_part_of_the_config_hash(tmp_path: Path) -> None:
    from storage.config_files import load_judge_config

    plain = load_judge_config(
        write_config(tmp_path, '[[metrics]]\nname = "Relevance"\n'), check_keys=False
    )
    (tmp_path / "evaluator.toml").unlink()
    with_threshold = load_judge_config(
        write_config(
            tmp_path, 'pass_threshold = 70\n[[metrics]]\nname = "Relevance"\npass_threshold = 80\n'
        ),
        check_keys=False,
    )
    assert with_threshold.config_hash == plain.config_hash  # re-runs stay free
    assert with_threshold.metrics[0].pass_threshold == 80.0
    assert with_threshold.settings.pass_threshold == 70.0


def test_the_report_shows_the_judge_against_the_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = _judged(tmp_path)
    labels = _labels(tmp_path, BINARY)
    page = tmp_path / "r.html"

    assert main(["report", "--db", str(db), "--out", str(page), "--labels", str(labels)]) == 0
    text = page.read_text(encoding="utf-8")
    block = text.split("<h3>The judge against labels</h3>", 1)[1].split("</table>", 1)[0]
    auc = roc_auc_score(BINARY, SCORES)  # Relevance scored as the answers say
    assert '<td>Relevance</td><td class="num">10</td><td class="num">50</td>' in block
    assert f"{auc:.3f} (" in block and f"{1 - auc:.3f} (" in block  # Coverage: 100 - score
    # without labels of its own the report takes traces.success: a table run has none
    assert main(["report", "--db", str(db), "--out", str(page)]) == 0
    assert "none of the 10 judged answers has a label" in page.read_text(encoding="utf-8")


def test_judge_fit_writes_the_thresholds_that_agree_best(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from storage.config_files import load_judge_config

    db, config = _judged(tmp_path)
    labels = _labels(tmp_path, BINARY)
    out = tmp_path / "fitted.toml"
    argv = ["judge", "--db", str(db), "--config", str(config), "--fit", str(labels)]

    assert main([*argv, "--out", str(out), "--folds", "2", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "cross-validation: 2 folds, seed 1" in printed
    fitted = load_judge_config(out, check_keys=False)
    # Relevance scored as the answers say: the best kappa over every cut, by scikit-learn
    cuts = sorted(set(SCORES) | {0.0})
    kappas = {c: cohen_kappa_score([int(s >= c) for s in SCORES], BINARY) for c in cuts}
    best = max(kappas.values())
    relevance = fitted.metrics[0]
    assert relevance.name == "Relevance"
    assert kappas[relevance.pass_threshold] == pytest.approx(best)
    assert f"| Relevance | 10 | 60 | {kappas[60.0]:.3f} | {relevance.pass_threshold:g} |" in printed
    assert fitted.config_hash == load_judge_config(config, check_keys=False).config_hash
    ordinal = _labels(tmp_path, ORDINAL, "ordinal.csv")
    assert main(["judge", "--db", str(db), "--config", str(config), "--fit", str(ordinal)]) == 1
    assert "needs binary labels" in capsys.readouterr().err


@pytest.mark.parametrize("scale", [(0.0, 1.0), (1.0, 2.0, 3.0, 4.0, 5.0)])
def test_the_bootstrap_s_counted_figures_are_the_answers_figures(
    scale: tuple[float, ...],
) -> None:
    """Every figure, and each resample's, is computed from counts of the distinct (score,
    label) pairs: on the unresampled counts they are exactly the figures scipy and
    scikit-learn give the answers themselves."""
    from transforms.judge.agreement import _cell_figures, _table

    rng = np.random.default_rng(5)
    k = len(scale)
    scores = rng.integers(0, 21, 400).astype(float) * 5
    codes = rng.integers(0, k, 400)
    distinct, cells = _table(scores, codes, k)
    counted = _cell_figures(cells[None], distinct, k == 2, 50.0, k)
    assert counted["rho"][0] == pytest.approx(spearmanr(scores, codes).statistic, abs=1e-12)
    if k == 2:
        assert counted["auc"][0] == pytest.approx(roc_auc_score(codes, scores), abs=1e-12)
        wanted = cohen_kappa_score((scores >= 50.0).astype(int), codes)
    else:
        wanted = cohen_kappa_score(ordinal_bins(scores, k), codes, weights="quadratic")
    assert counted["kappa"][0] == pytest.approx(wanted, abs=1e-12)
