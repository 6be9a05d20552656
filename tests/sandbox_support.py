"""What the tests that run programs through the code sandbox share: a mark that skips
them, naming what is missing, where no isolation holds (bubblewrap not installed, or
unable to make namespaces here), since the sandbox then refuses model code."""

from __future__ import annotations

import pytest

from search_o1.eval import isolation

_FOUND = isolation.find()

needs_isolation = pytest.mark.skipif(
    not _FOUND.holds, reason=f"the code sandbox needs isolation: {_FOUND.missing}"
)
