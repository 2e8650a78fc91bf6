"""`local_http()`: one HTTP client for calls to the local cluster's services (Mars's API and
`/metrics`, the Spark master's UI, the schema registry), from the launcher and the tests.

`httpx.get` and its siblings build a client per call, and with it an SSL context that loads
the machine's CA certificates: about 50 ms of CPU each. In one `make test` the integration
tests' polling loops spent about 85 CPU seconds there (py-spy of its pytest process,
2026-11-28), on the two cores the pipeline under test runs on. One pooled client pays it
once and keeps its connections. httpx clients are safe to share between threads; every call
passes its own timeout. Made at the first call, not at import: every `mars` process imports
the launcher.
"""

from __future__ import annotations

from functools import cache

import httpx


@cache
def local_http() -> httpx.Client:
    return httpx.Client()
