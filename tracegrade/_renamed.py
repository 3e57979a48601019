"""Public names renamed for one name per concept (docs/architecture.md), kept one release under
the old name: each use of an old name warns once per place with a DeprecationWarning."""

from __future__ import annotations

import warnings


def warn_renamed(module: str, old: str, new: str) -> None:
    """Warn that `module.old` is now `module.new`, at the line that used the old name (the
    caller of the module's `__getattr__`)."""
    warnings.warn(
        f"{module}.{old} is now {module}.{new}; the old name goes in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
