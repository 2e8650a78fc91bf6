"""Run the schemathesis v3 CLI with a compatibility bridge for newer Hypothesis.

hypothesis-jsonschema 0.23.1 (the last release, used by schemathesis 3) drives
`hypothesis.internal.conjecture.utils.many` through `many.more()`; Hypothesis 6.170 replaced
that with `with many(...) as elements: for _ in elements:`. This module gives `many` a `more()`
built on the new protocol, in the fuzzing subprocess only, then hands over to schemathesis.
Usage: `python -m tests.integration.api.schemathesis_runner run <schema url> [options]`.
"""

from __future__ import annotations

import sys
from typing import Any

from hypothesis.internal.conjecture import utils as conjecture_utils


def _more(self: Any) -> bool:
    """Old `many.more()`: enter on first call, then one step of the new iterator."""
    if getattr(self, "_compat_iterator", None) is None:
        self.__enter__()
        self._compat_iterator = iter(self)
    try:
        next(self._compat_iterator)
    except StopIteration:
        self.__exit__(None)
        return False
    return True


def install_bridge() -> None:
    if not hasattr(conjecture_utils.many, "more"):
        conjecture_utils.many.more = _more  # type: ignore[attr-defined]


if __name__ == "__main__":
    install_bridge()
    from schemathesis.cli import schemathesis

    sys.exit(schemathesis(args=sys.argv[1:], prog_name="st"))
