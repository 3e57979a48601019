"""Span files (OTLP, OpenInference and Phoenix, Langfuse, MLflow) read into span rows, parked by trace, and the imported traces written out."""
