"""The judge's run machinery: the flow, the one module that calls LLMs, live runs, batches,
rate limits and Dask shards."""
