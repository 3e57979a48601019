"""Confidence's tables and files: levels and step scores, factors files, and levels counted against labels."""
