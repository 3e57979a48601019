"""The fast CPU modes of the embedder: the local model exported once to ONNX, then run by
OpenVINO in bfloat16 (`bf16-openvino`) or by ONNX Runtime after dynamic int8 quantization
(`int8-onnxruntime`). Prepared models are kept on disk by model and mode; nothing is
downloaded, the export reads the files the model was loaded from.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipelines.errors import EmbedderError
from transforms.config.scoring import EmbeddingConfig

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

__all__ = ["CPU_MODES", "CpuModeModel", "TextTokenizer", "prepared_dir"]

CPU_MODES = {
    "bf16-openvino": ("openvino",),
    "int8-onnxruntime": ("onnxruntime", "onnx"),
}
"""The CPU modes and the packages each needs (the `cpu-fast` extra of tracegrade)."""

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _require(mode: str) -> None:
    for package in CPU_MODES[mode]:
        try:
            importlib.import_module(package)
        except ImportError as exc:
            raise EmbedderError(
                f"[embedding] precision {mode!r} needs the package {package!r}, which is not "
                "installed; install tracegrade[cpu-fast] (pip install -e '.[cpu-fast]') or use "
                "precision = 'fp32'"
            ) from exc


def prepared_dir(config: EmbeddingConfig) -> Path:
    """The folder that holds the prepared models (see `EmbeddingConfig.prepared_dir`)."""
    if config.prepared_dir is not None:
        return Path(config.prepared_dir).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tracegrade" / "embedders"


def _identity(location: str, mode: str) -> str:
    """A hash of the model's files (names, sizes), the mode and the versions that export it."""
    from importlib.metadata import version

    digest = hashlib.sha256(mode.encode())
    folder = Path(location)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder)}:{path.stat().st_size}\n".encode())
    for package in ("torch", *CPU_MODES[mode]):
        digest.update(f"{package}={version(package)}\n".encode())
    return digest.hexdigest()[:16]


def _pooled(transformer: Any) -> Any:
    """The transformer with the model's mean pooling and L2 normalization, for the export."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    return Pooled().eval()


def _check_architecture(model: SentenceTransformer) -> None:
    modules: list[Any] = list(model)
    names = [type(module).__name__ for module in modules]
    pooling = modules[1].get_config_dict().get("pooling_mode") if len(names) > 1 else None
    if names[:2] != ["Transformer", "Pooling"] or pooling != "mean" or len(names) > 3:
        raise EmbedderError(
            f"the CPU modes (bf16 on the CPU, int8) export mean-pooled transformer models; this "
            f"model has modules {names} with pooling {pooling!r}; use precision = 'fp32'"
        )


def _export_onnx(model: SentenceTransformer, target: Path) -> None:
    import torch

    _check_architecture(model)
    example = model.tokenizer(["a", "an example text"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    with warnings.catch_warnings(), torch.no_grad():
        # the TorchScript exporter (the one optimum used) is deprecated but needs no onnxscript
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _pooled(model[0].auto_model),
            tuple(example[name] for name in _INPUTS),
            str(target),
            input_names=list(_INPUTS),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def _quantize_int8(source: Path, target: Path) -> None:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # its advice to pre-process goes to the root logger
    try:
        # int8 weights per output channel, activations quantized per batch at run time; only
        # the weight matrices (the embeddings table and the attention products stay fp32)
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            extra_options={"DefaultTensorType": 1},
        )
    finally:
        root.setLevel(level)


def _prepare(model: SentenceTransformer, location: str, config: EmbeddingConfig) -> Path:
    """The prepared model file of `config`'s mode, exported now if not on disk yet."""
    mode = config.mode()
    slug = "".join(c if c.isalnum() else "-" for c in Path(config.model).name)[:40]
    folder = prepared_dir(config) / f"{slug}-{mode}-{_identity(location, mode)}"
    name = "model_int8.onnx" if mode == "int8-onnxruntime" else "model.onnx"
    if (folder / name).is_file():
        return folder / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".prepare-", dir=folder.parent))
    try:
        _export_onnx(model, work / "model.onnx")
        if mode == "int8-onnxruntime":
            _quantize_int8(work / "model.onnx", work / name)
            (work / "model.onnx").unlink()
        try:
            work.rename(folder)  # atomic: a reader sees a whole folder or none
        except OSError:
            if not (folder / name).is_file():  # another process prepared it first otherwise
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder / name


class TextTokenizer:
    """The model's tokenizer with its truncation and padding, counting truncated texts."""

    def __init__(self, model: SentenceTransformer, max_seq_length: int) -> None:
        from tokenizers import Tokenizer

        backend: Tokenizer = model.tokenizer.backend_tokenizer
        self._tokenizer: Tokenizer = Tokenizer.from_str(backend.to_str())
        self._tokenizer.enable_truncation(max_seq_length)
        self._tokenizer.no_padding()
        pad = model.tokenizer.pad_token_id
        self._pad = 0 if pad is None else int(pad)

    def truncated(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than the kept tokens."""
        return sum(1 for e in self._tokenizer.encode_batch(list(texts)) if e.overflowing)

    def batch(self, texts: Sequence[str]) -> tuple[dict[str, npt.NDArray[np.int64]], int]:
        """Padded model inputs of `texts`, and how many were truncated."""
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max((len(e.ids) for e in encodings), default=0)
        arrays = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in _INPUTS}
        arrays["input_ids"].fill(self._pad)
        for row, e in enumerate(encodings):
            size = len(e.ids)
            arrays["input_ids"][row, :size] = e.ids
            arrays["attention_mask"][row, :size] = e.attention_mask
            arrays["token_type_ids"][row, :size] = e.type_ids
        return arrays, sum(1 for e in encodings if e.overflowing)


class CpuModeModel:
    """A prepared model of one CPU mode: `encode` gives normalized vectors like the model's."""

    def __init__(self, model: SentenceTransformer, location: str, config: EmbeddingConfig):
        mode = config.mode()
        if mode not in CPU_MODES:
            raise ValueError(f"{mode!r} is not a CPU mode")
        _require(mode)
        self.mode = mode
        self.path = _prepare(model, location, config)
        self.tokenizer = TextTokenizer(model, config.max_seq_length)
        self._run = self._openvino() if mode == "bf16-openvino" else self._onnxruntime()

    def _openvino(self) -> Any:
        import openvino

        compiled = openvino.Core().compile_model(
            str(self.path), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"}
        )
        request = compiled.create_infer_request()
        return lambda inputs: np.array(request.infer(inputs)[0], dtype=np.float32)

    def _onnxruntime(self) -> Any:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(self.path), providers=["CPUExecutionProvider"])
        return lambda inputs: np.asarray(session.run(None, inputs)[0], dtype=np.float32)

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[npt.NDArray[np.float32], int]:
        """Unit vectors of `texts` in their order, and how many texts were truncated;
        `progress(n)` after each batch of n texts.

        Batches are cut from the texts sorted longest first, so padding stays short.
        """
        order = np.argsort([-len(text) for text in texts], kind="stable")
        parts, truncated = [], 0
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            inputs, cut = self.tokenizer.batch(batch)
            parts.append(self._run(inputs))
            truncated += cut
            if progress is not None:
                progress(len(batch))
        if not parts:
            return np.empty((0, 0), dtype=np.float32), 0
        vectors = np.empty_like(parts[0], shape=(len(texts), parts[0].shape[1]))
        vectors[order] = np.concatenate(parts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        return vectors, truncated
