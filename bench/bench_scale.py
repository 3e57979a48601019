"""Scaling the embedding stage: local vs a 2-worker Dask cluster, fp32 vs bf16, cuda vs cpu.

Parts (all by default except `devices`):

    cluster    this machine: the score_traces flow on N distinct texts, once with
               [execution] engine = "local" (one process, torch on every core) and once with
               engine = "dask" (a local cluster of 2 single-threaded worker processes through
               Prefect's DaskTaskRunner); figures from the flow's own stage timings, texts/s,
               and the largest N difference between the two runs
    precision  this machine: the demo archive scored twice through the flow, fp32 (the
               reference) and bf16; embedding stage texts/s of each and the largest N
               difference (the precision's effect on the scores)
    devices    a GPU machine: SentenceEmbedder texts/s on cuda vs cpu, fp32 / bf16 / fp16,
               the cuda batch-size sweep, and the largest vector difference to cpu fp32; needs
               only torch, sentence-transformers, pydantic and a text file (--texts-json)

Run: .venv/bin/python bench/bench_scale.py [--part cluster|precision|devices] [--n 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import OUT_DIR, Check, add_common_args, begin, end, fmt_rate, print_table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


def _flow_run(export: Path, work: Path, name: str, toml: str) -> tuple[Any, Any]:
    """One score_traces run into a new database; its summary and the latest scores."""
    import duckdb

    from pipelines.score import score_traces

    config = work / f"{name}.toml"
    config.write_text(toml)
    db = work / f"{name}.duckdb"
    summary = score_traces([str(export)], db=str(db), config=str(config))
    con = duckdb.connect(str(db), read_only=True)
    try:
        scores = con.sql("SELECT trace_id, novelty FROM latest_scores ORDER BY trace_id").pl()
    finally:
        con.close()
    return summary, scores


def _stage_seconds(summary: Any, *stages: str) -> float:
    return sum(summary.timings.get(stage, 0.0) for stage in stages)


def part_cluster(n: int, work: Path) -> tuple[list[Check], dict[str, Any]]:
    """Both engines on n texts, and each on 64 texts to tell fixed costs from throughput."""
    from bench_embedding import distinct_text_traces

    engines = {
        "local": ("", ("embed", "replay")),
        "dask": (
            '[execution]\nengine = "dask"\nworkers = 2\nthreads_per_worker = 1\n',
            ("embed and replay (dask)",),
        ),
    }
    small = 64
    seconds: dict[str, dict[int, float]] = {}
    novelty: dict[str, Any] = {}
    for size in (small, n):
        export = work / f"traces-{size}.parquet"
        distinct_text_traces(size, seed=5).write_parquet(export)
        for engine, (toml, stages) in engines.items():
            summary, scores = _flow_run(export, work, f"{engine}-{size}", toml)
            assert summary.counts["texts_embedded"] == size
            seconds.setdefault(engine, {})[size] = _stage_seconds(summary, *stages)
            novelty[engine] = scores["novelty"]
    diff = float(np.abs(novelty["local"] - novelty["dask"]).max())
    rate = {e: n / s[n] for e, s in seconds.items()}
    steady = {e: (n - small) / (s[n] - s[small]) for e, s in seconds.items()}
    checks = [
        Check(
            f"embed + replay stage, {n:,} texts (texts/s)",
            fmt_rate(rate["dask"]) + " (dask, 2 workers)",
            fmt_rate(rate["local"]) + " (local)",
            f"{rate['dask'] / rate['local']:.2f}x",
            "",
            None,
        ),
        Check(
            "stage seconds, 64 texts (fixed costs)",
            f"{seconds['dask'][small]:.1f}",
            f"{seconds['local'][small]:.1f}",
            "",
            "",
            None,
        ),
        Check(
            "marginal texts/s (n minus 64 texts)",
            fmt_rate(steady["dask"]),
            fmt_rate(steady["local"]),
            f"{steady['dask'] / steady['local']:.2f}x",
            "",
            None,
        ),
        Check("max |N diff| dask vs local", f"{diff:.1e}", "", "", "<= 1e-6", diff <= 1e-6),
    ]
    figures = {
        "texts": n,
        "seconds": seconds,
        "rate": rate,
        "marginal_rate": steady,
        "max_n_diff": diff,
    }
    return checks, figures


def part_precision(work: Path) -> tuple[list[Check], dict[str, Any]]:
    from tracegrade.demo import write_demo_archive

    archive = work / "archive"
    write_demo_archive(archive)
    runs = {}
    for precision in ("fp32", "bf16"):
        summary, scores = _flow_run(
            archive, work, precision, f'[embedding]\nprecision = "{precision}"\n'
        )
        runs[precision] = (summary, scores)
    rates = {
        precision: summary.counts["texts_embedded"] / _stage_seconds(summary, "embed")
        for precision, (summary, _) in runs.items()
    }
    fp32, bf16 = runs["fp32"][1], runs["bf16"][1]
    assert fp32["trace_id"].equals(bf16["trace_id"])
    delta = np.abs(fp32["novelty"].to_numpy() - bf16["novelty"].to_numpy())
    checks = [
        Check(
            "embedding stage (texts/s)",
            fmt_rate(rates["bf16"]) + " (bf16)",
            fmt_rate(rates["fp32"]) + " (fp32)",
            f"{rates['bf16'] / rates['fp32']:.2f}x",
            "",
            None,
        ),
        Check("max |N diff| bf16 vs fp32", f"{delta.max():.4f}", "", "", "", None),
        Check("mean |N diff| bf16 vs fp32", f"{delta.mean():.5f}", "", "", "", None),
        Check("traces with |N diff| > 0.01", f"{int((delta > 0.01).sum()):,}", "", "", "", None),
    ]
    figures = {
        "traces": fp32.height,
        "texts": runs["fp32"][0].counts["texts_embedded"],
        "rates": rates,
        "max_n_diff": float(delta.max()),
        "mean_n_diff": float(delta.mean()),
    }
    return checks, figures


def part_devices(texts: list[str], model: str | None) -> tuple[list[Check], dict[str, Any]]:
    import torch

    from pipelines.embedder import SentenceEmbedder
    from transforms.config.scoring import EmbeddingConfig

    base = {} if model is None else {"model": model}

    def rate(device: str, precision: str, batch: int | None) -> tuple[float, np.ndarray]:
        config = EmbeddingConfig(device=device, precision=precision, batch_size=batch, **base)
        embedder = SentenceEmbedder(config)
        embedder.encode(texts)
        best = float("inf")
        for _ in range(1 if device == "cpu" else 3):
            if device == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            vectors = embedder.encode(texts)
            if device == "cuda":
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - started)
        return len(texts) / best, vectors

    tokenizer = SentenceEmbedder(EmbeddingConfig(**base)).load().tokenizer
    started = time.perf_counter()
    for start in range(0, len(texts), 512):
        tokenizer(texts[start : start + 512], padding=True, truncation=True, max_length=256)
    print(f"tokenizer alone: {len(texts) / (time.perf_counter() - started):,.0f} texts/s")
    cpu_rate, reference = rate("cpu", "fp32", None)
    print(f"cpu fp32 (torch {torch.get_num_threads()} threads): {cpu_rate:,.0f} texts/s")
    checks = []
    figures: dict[str, Any] = {"cpu_fp32": cpu_rate, "cuda": {}}
    for precision in ("fp32", "bf16", "fp16"):
        for batch in (64, 128, 256, 512, 1024):
            speed, vectors = rate("cuda", precision, batch)
            diff = float(np.abs(vectors - reference).max())
            figures["cuda"][f"{precision}/{batch}"] = {"rate": speed, "max_vector_diff": diff}
            print(
                f"cuda {precision} batch {batch}: {speed:,.0f} texts/s, max |v - cpu fp32| {diff:.1e}"
            )
            checks.append(
                Check(
                    f"cuda {precision}, batch {batch} (texts/s)",
                    fmt_rate(speed),
                    fmt_rate(cpu_rate) + " (cpu fp32)",
                    f"{speed / cpu_rate:.1f}x",
                    "",
                    None,
                )
            )
    return checks, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["cluster", "precision", "devices"], action="append")
    parser.add_argument("--n", type=int, default=2000, help="distinct texts for `cluster`")
    parser.add_argument("--texts-json", type=Path, help="texts for `devices` (a JSON list)")
    parser.add_argument("--model", help="model folder for `devices` (default: the package's)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    add_common_args(parser)
    args = parser.parse_args()
    parts = args.part or ["cluster", "precision"]

    info, load = begin("bench_scale: embedding local vs Dask, fp32 vs bf16, cuda vs cpu", args)
    checks: list[Check] = []
    figures: dict[str, Any] = {"machine": info}
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench_scale-", dir=args.out) as folder:
        work = Path(folder)
        if "devices" in parts:
            texts = json.loads(args.texts_json.read_text())
            part_checks, figures["devices"] = part_devices(texts, args.model)
            checks += part_checks
        if "cluster" in parts or "precision" in parts:
            from prefect.testing.utilities import prefect_test_harness

            with prefect_test_harness(server_startup_timeout=120):
                if "cluster" in parts:
                    part_checks, figures["cluster"] = part_cluster(args.n, work)
                    checks += part_checks
                if "precision" in parts:
                    part_checks, figures["precision"] = part_precision(work)
                    checks += part_checks
    print()
    print_table(checks)
    end(info, load)
    out = args.out / "bench_scale.json"
    out.write_text(json.dumps(figures, indent=2, default=str))
    print(f"figures: {out}")


if __name__ == "__main__":
    main()
