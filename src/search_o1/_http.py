"""Small helpers shared by every HTTP client in the package (model servers, search APIs)."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime


def retry_after_s(header: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date).

    None when absent or unreadable; never negative.

    >>> retry_after_s("2"), retry_after_s("soon"), retry_after_s(None)
    (2.0, None, None)
    """
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(header).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
