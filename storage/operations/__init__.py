"""The operation scorers' tables and their eval case files."""
