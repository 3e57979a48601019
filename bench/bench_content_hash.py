"""The content hash of 1,000,000 realistic traces as a run takes it
(`storage.inputs.canonical.content_hashes`: each chunk's canonical JSON encoded and hashed
column-wise by Polars and the polars-hash plugin, no Python call per row) against the recipe
runs used until 2026-12-02 (the same JSON, then `hashlib.sha256(data).hexdigest()` row by row
in Python), and DuckDB's column-wise `sha256` over the same JSON for scale. All hash the same
canonical frame, read once from the realistic Parquet file (`bench/_realistic.py`, generated
once under bench/out/); the digests must be equal. The JSON encoding alone is timed too.

Run: .venv/bin/python bench/bench_content_hash.py [--n 1000000]
"""

from __future__ import annotations

import hashlib
import time

import duckdb
import polars as pl
from _common import (
    OUT_DIR,
    Check,
    Comparison,
    begin,
    bench_args,
    end,
    print_table,
    save_result,
    short_machine,
    timed,
)
from _realistic import write_realistic_parquet

from storage.inputs import canonical
from storage.inputs.readers import read_traces


def row_hashes(frame: pl.DataFrame) -> pl.Series:
    """The runs' recipe until 2026-12-02: each chunk's JSON cast to bytes once, then hashed
    row by row by `hashlib` (OpenSSL) in a Python loop."""
    hashes: list[str] = []
    for chunk in canonical.canonical_json(frame):
        hashes.extend(hashlib.sha256(data).hexdigest() for data in chunk.cast(pl.Binary).to_list())
    return pl.Series("content_hash", hashes, dtype=pl.String)


def duckdb_hashes(frame: pl.DataFrame) -> pl.Series:
    """The same JSON, each chunk hashed by DuckDB's sha256 in one statement."""
    con = duckdb.connect()
    try:
        digests = []
        for chunk in canonical.canonical_json(frame):
            texts = pl.DataFrame({"text": chunk})
            con.register("texts", texts)
            digests.append(con.sql("SELECT sha256(text) AS content_hash FROM texts").pl())
            con.unregister("texts")
        return pl.concat(digests).to_series()
    finally:
        con.close()


def main() -> None:
    args = bench_args(__doc__ or "", n_default=1_000_000, unit="traces")
    path = OUT_DIR / f"realistic_{args.n}_seed{args.seed}.parquet"
    if not path.exists():
        write_realistic_parquet(path, args.n, seed=args.seed)
    info, load = begin("content hash: column-wise (a run) vs per-row hashlib (before)", args)
    started = time.perf_counter()
    frame = read_traces([path]).rows
    read_s = time.perf_counter() - started
    print(
        f"input: {frame.height:,} traces from {path.name}, read in {read_s:.1f} s (hashes included)"
    )
    ours = timed(lambda: canonical.content_hashes(frame))
    base = timed(lambda: row_hashes(frame))
    encoding = timed(lambda: list(canonical.canonical_json(frame)))
    in_duckdb = timed(lambda: duckdb_hashes(frame))
    same = (
        ours.result.equals(base.result)
        and ours.result.equals(in_duckdb.result)
        and ours.result.equals(frame["content_hash"])
    )
    end(info, load)
    comparison = Comparison(frame.height, ours, base)
    print(comparison.timings("traces"))
    print_table(
        [
            comparison.throughput_check("traces", 1.0),
            comparison.wall_time_check(),
            Check("of which the JSON encoding (s)", f"{encoding.seconds:.3f}", "", "", "", None),
            Check(
                "DuckDB's sha256 over the same JSON (s)",
                f"{in_duckdb.seconds:.3f}",
                "",
                f"{in_duckdb.seconds / ours.seconds:.2f}x",
                "",
                None,
            ),
            Check("same digests both ways", str(same), "", "", "equal", same),
        ],
        short_machine(info),
    )
    save_result(
        "bench_content_hash",
        {
            "machine": info,
            **comparison.figures(),
            "read_s": read_s,
            "encoding_s": encoding.seconds,
            "duckdb_s": in_duckdb.seconds,
            "same_digests": same,
        },
    )


if __name__ == "__main__":
    main()
