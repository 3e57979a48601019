"""The `tracegrade` command line; one module per command family, `main` the entry point."""

from __future__ import annotations

from tracegrade.cli.app import main

__all__ = ["main"]
