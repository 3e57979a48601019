"""The embeddings table of a store: which texts still need a vector, storing new vectors, and
reading vectors back in a given order. Vectors are a pure cache, committed as soon as written."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:  # imported where used: `tracegrade sql` starts without them
    import numpy as np
    import numpy.typing as npt
    import polars as pl

from storage.store._connection import uninterrupted_method

__all__ = ["EmbeddingCache"]


class EmbeddingCache:
    """The embedding methods of DuckDBStore (storage.store.duckdb_store), on its connection."""

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        raise NotImplementedError  # DuckDBStore._con, the file attached

    def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError  # DuckDBStore.transaction

    @uninterrupted_method
    def missing_embeddings(self, keys: pl.Series) -> pl.Series:
        """The distinct keys among `keys` that have no stored vector."""
        import polars as pl

        wanted = pl.DataFrame({"embedding_key": keys.unique(maintain_order=True)})
        self._con.register("__wanted", wanted)
        try:
            found = self._con.sql(
                "SELECT w.embedding_key FROM __wanted w WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.embedding_key = w.embedding_key)"
            ).pl()
        finally:
            self._con.unregister("__wanted")
        return found["embedding_key"]

    @uninterrupted_method
    def embedding_models(self) -> list[str]:
        """The model keys (model|mode|length) that stored vectors were made under."""
        rows = self._con.sql("SELECT DISTINCT model FROM embeddings ORDER BY model").fetchall()
        return [row[0] for row in rows]

    @uninterrupted_method
    def put_embeddings(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], *, model: str, run_id: str
    ) -> None:
        """Store vectors under their keys; committed at once, since they are a pure cache."""
        import numpy as np
        import polars as pl

        frame = pl.DataFrame(
            {
                "embedding_key": list(keys),
                "model": model,
                "dimensions": vectors.shape[1],
                "vector": vectors.astype(np.float32),
                "run_id": run_id,
            }
        ).with_columns(
            pl.col("vector").cast(pl.List(pl.Float32)), pl.col("dimensions").cast(pl.Int32)
        )
        with self.transaction() as con:
            con.register("__vectors", frame)
            try:
                con.execute(
                    "INSERT INTO embeddings BY NAME SELECT * FROM __vectors v WHERE NOT EXISTS "
                    "(SELECT 1 FROM embeddings e WHERE e.embedding_key = v.embedding_key)"
                )
            finally:
                con.unregister("__vectors")

    @uninterrupted_method
    def vectors(self, keys: pl.Series) -> npt.NDArray[np.float32]:
        """Stored vectors in the order of `keys` (each key must be stored)."""
        import numpy as np
        import polars as pl

        order = pl.DataFrame({"embedding_key": keys, "position": np.arange(len(keys))})
        self._con.register("__order", order)
        try:
            table = self._con.sql(
                "SELECT o.position, e.vector FROM __order o JOIN embeddings e USING (embedding_key) "
                "ORDER BY o.position"
            ).to_arrow_table()
        finally:
            self._con.unregister("__order")
        if table.num_rows != len(keys):
            raise LookupError(f"{len(keys) - table.num_rows} embeddings are missing from the store")
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return flat.reshape(len(keys), -1) if len(keys) else flat.reshape(0, 0)
