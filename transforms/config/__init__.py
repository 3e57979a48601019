"""Configuration: one pydantic model per file kind (scoring, chat import, confidence, operations,
judge), validated before any work. `storage.config_files` reads the files."""
