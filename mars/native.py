"""`mars_native` (native/, Rust), or None where it is not built: the one place that imports it.

`make setup` builds it (it needs cargo). Each user keeps a pure-Python path for None and
imports the name from here, so a test can switch one path off (`monkeypatch.setattr(module,
"mars_native", None)`) without touching the others.
"""

from __future__ import annotations

__all__ = ["mars_native", "native_available"]

try:
    import mars_native
except ImportError:  # not built: every caller falls back to its Python path
    mars_native = None  # type: ignore[assignment]


def native_available() -> bool:
    return mars_native is not None
