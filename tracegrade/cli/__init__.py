"""The `tracegrade` command line; one module per command family, `main` the entry point."""

from __future__ import annotations

from tracegrade.cli.main import main

__all__ = ["main"]
