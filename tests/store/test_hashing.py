"""Content hashes must stay what they were when a database was written, on every machine and
version (issue 48), or every stored trace would be scored again as changed: SHA-256 of each
row's canonical JSON, hashed in chunks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

import storage.inputs.canonical as canonical
from storage.inputs.readers import read_traces
from storage.store.hashing import embedding_keys, sha256_hex

DATA = Path(__file__).resolve().parents[1] / "data"

_TEXTS = [
    "",
    "a",
    "ab\0cd",
    "héllo wörld",
    "日本語のテキスト",
    "🙂" * 3,
    "x" * 1_000_003,
    '{"a":[1,2]}',
]


def _hashlib(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_sha256_hex_gives_hashlibs_digest_of_each_utf8_text() -> None:
    digests = sha256_hex(pl.Series("text", _TEXTS))

    assert digests.name == "text" and digests.dtype == pl.String
    assert digests.to_list() == [*map(_hashlib, _TEXTS)]


def test_embedding_keys_hash_the_model_key_a_nul_byte_and_the_texts_hash() -> None:
    shas = [_hashlib(text) for text in _TEXTS]

    keys = embedding_keys("sentence-transformers/all-MiniLM-L6-v2@fp32", shas)

    prefix = b"sentence-transformers/all-MiniLM-L6-v2@fp32\0"
    assert keys.name == "embedding_key"
    assert keys.to_list() == [hashlib.sha256(prefix + sha.encode()).hexdigest() for sha in shas]
    assert (
        keys.to_list()
        == embedding_keys("sentence-transformers/all-MiniLM-L6-v2@fp32", pl.Series(shas)).to_list()
    )


_ADDED = {
    "google-adk-2025-08-28.trace.json",
    "vercel-ai-sdk-2025-09-18.trace.json",
    "koog-2025-08-26.trace.json",
    "beeai-2025-08-01.trace.json",
}
"""Files added to those folders after 2026-11-29."""


@pytest.mark.parametrize(
    ("folder", "rows", "digest"),
    [
        ("langfuse", 6, "b7cb3cd5be01d3f2ed823a8d8be3a38e23a6f89f0489ea05c83820c4ae1117c3"),
        ("toolbench", 3, "b2ab04f05f22daffec68c86318c4d61ddda549c81200b95a78a7aead4ab39a35"),
        ("openinference", 33, "5a56130d1f2a424d37572df1375c20f79e7fe5ed3860e591e71a97c149b09d48"),
    ],
)
def test_content_hashes_of_real_files_are_the_ones_stored_before(
    folder: str, rows: int, digest: str
) -> None:
    """The digests (all of a folder's, joined) taken with the per-row hashlib code of
    2026-11-29 (f165211): databases written before keep matching what is read now. The
    folder's files of that day: those added since have no digest of then."""
    files = sorted(path for path in (DATA / folder).iterdir() if path.name not in _ADDED)
    hashes = read_traces(files).rows["content_hash"].to_list()

    assert len(hashes) == rows
    assert hashlib.sha256("\n".join(hashes).encode()).hexdigest() == digest


def test_content_hashes_are_the_same_in_chunks_and_equal_hashlib_of_the_canonical_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frame = read_traces([DATA / "openinference"]).rows
    encoded = frame.select(
        pl.struct(
            pl.col(name).dt.to_string("%Y-%m-%dT%H:%M:%S%.6fZ")
            if name == "created_at"
            else pl.col(name)
            for name in canonical.HASHED
        ).struct.json_encode()
    ).to_series()

    whole = canonical.content_hashes(frame)
    monkeypatch.setattr(canonical, "_HASH_CHUNK_ROWS", 4)
    in_chunks = canonical.content_hashes(frame)

    assert whole.name == in_chunks.name == "content_hash"
    assert whole.to_list() == in_chunks.to_list() == [_hashlib(text) for text in encoded]
    assert whole.to_list() == frame["content_hash"].to_list()
