"""Trace input files by format: the format registry, each format's reader into canonical trace rows, and what a file that yields no trace holds."""
