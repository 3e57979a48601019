"""The judge's tables and files: results and scores, the inputs a run judges, labels beside judgements, and shard files."""
