"""The judge's pure parts: metrics and their prompts, providers, resolution of the configuration,
planning (cache keys, estimates) and the report. The calls are `pipelines.judge`'s."""
