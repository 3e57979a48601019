"""tracegrade's storage layer: the database and the files tracegrade reads, grouped by what they
hold (docs/architecture.md)."""
