"""The `tracegrade` command line; one module per command family, `main` the entry point."""

from __future__ import annotations

import os

# Set before Polars and pyarrow load (the CLI's own imports load them): Polars' jemalloc
# returns freed pages to the system within half a second instead of keeping them, and pyarrow
# allocates from the system allocator, so a long run's resident memory follows what it holds
# (docs/performance.md, end to end). A value the user set is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:500,muzzy_decay_ms:0")
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from tracegrade.cli.app import main  # noqa: E402

__all__ = ["main"]
