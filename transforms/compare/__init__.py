"""Two populations of stored traces compared: differences with intervals, and a gate.

`stats` (the differences over cells the store counts), `gate` (the `--fail-on` lines), `text`
(the comparison as Markdown and JSON). Pure logic: the cells come from
`storage.compare.store`, the command is `tracegrade compare` (docs/compare.md).
"""
