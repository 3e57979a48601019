"""Embedding on a GPU without letting the host hold it back: the texts of a call are sorted
longest first and cut into batches (short padding), a worker thread tokenizes the batches
ahead of the model (the Rust tokenizer releases the GIL), host tensors are pinned so the
copies to the device overlap, and the vectors stay on the device until the last batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipelines.cpu_modes import TextTokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["pipelined_encode"]


def _to_device(array: npt.NDArray[np.int64], device: str) -> Any:
    import torch

    tensor = torch.from_numpy(array)
    if device.startswith("cuda"):
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor


def pipelined_encode(
    model: SentenceTransformer,
    tokenizer: TextTokenizer,
    texts: Sequence[str],
    batch_size: int,
    device: str,
    progress: Callable[[int], None] | None = None,
) -> tuple[npt.NDArray[np.float32], int]:
    """Unit float32 vectors of `texts` in their order (the model's own pooling and
    normalization), and how many texts were cut at the tokenizer's length; `progress(n)`
    after each batch of n texts is queued on the device."""
    import torch

    order = np.argsort([-len(text) for text in texts], kind="stable")
    batches = [
        [texts[i] for i in order[start : start + batch_size]]
        for start in range(0, len(texts), batch_size)
    ]
    outputs, truncated = [], 0
    with ThreadPoolExecutor(1, thread_name_prefix="tokenizer") as pool, torch.inference_mode():
        for inputs, cut in pool.map(tokenizer.batch, batches):
            truncated += cut
            features = {name: _to_device(array, device) for name, array in inputs.items()}
            outputs.append(model(features)["sentence_embedding"].float())
            if progress is not None:
                progress(int(inputs["input_ids"].shape[0]))
        if not outputs:
            return np.empty((0, 0), dtype=np.float32), 0
        stacked = torch.cat(outputs).cpu().numpy().astype(np.float32, copy=False)
    vectors: npt.NDArray[np.float32] = np.empty_like(stacked)
    vectors[order] = stacked
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms > 0, norms, 1.0)
    return vectors, truncated
