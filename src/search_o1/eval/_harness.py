"""Runs inside the sandbox: refuse sockets, then run a solution as a script or call it.

Invoked as `python -I _harness.py stdin SOLUTION` or
`python -I _harness.py functional SOLUTION ARGS_FILE RESULT_FILE [METHOD]`.
Kept free of package imports: the sandboxed interpreter sees only the standard library.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

# Names LeetCode-style solutions use without importing them (as the judge's header does).
_PRELUDE = """
from typing import *
import collections, heapq, math, itertools, bisect, functools, string, re, sys
from collections import Counter, defaultdict, deque, OrderedDict
from functools import lru_cache, cache, reduce, cmp_to_key
from heapq import heappush, heappop, heapify, heapreplace, nlargest, nsmallest
from itertools import accumulate, combinations, permutations, product, chain, groupby
from bisect import bisect_left, bisect_right, insort
from math import gcd, inf, sqrt, ceil, floor, log2, comb, isqrt
"""


def _refuse_sockets() -> None:
    """Fallback network block for when no network namespace could be made."""
    import _socket
    import socket

    class _Refused(socket.socket):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise PermissionError("network access is disabled in the sandbox")

    socket.socket = _Refused  # type: ignore[misc]
    _socket.socket = _Refused  # type: ignore[misc]
    socket.create_connection = _Refused
    socket.socketpair = _Refused  # type: ignore[assignment]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _run_script(path: str) -> None:
    code = compile(_read(path), "solution.py", "exec")
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})


def _pick_method(cls: type, n_args: int, wanted: str | None) -> Any:
    if wanted and hasattr(cls, wanted):
        return getattr(cls(), wanted)
    own = [v for k, v in vars(cls).items() if callable(v) and not k.startswith("_")]
    for fn in own:  # the entry point is the public method taking exactly the test's args
        params = list(inspect.signature(fn).parameters)[1:]
        if len(params) == n_args:
            return getattr(cls(), fn.__name__)
    if not own:
        raise LookupError("class Solution has no public method")
    return getattr(cls(), own[0].__name__)


def _call(path: str, args_path: str, result_path: str, wanted: str | None) -> None:
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": __builtins__}
    exec(compile(_PRELUDE, "prelude", "exec"), namespace)
    exec(compile(_read(path), "solution.py", "exec"), namespace)
    cls = namespace.get("Solution")
    if not isinstance(cls, type):
        raise LookupError("no class Solution in the program")
    lines = [ln for ln in _read(args_path).split("\n") if ln.strip()]
    args = [json.loads(ln) for ln in lines]
    result = _pick_method(cls, len(args), wanted)(*args)
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f, default=list)


def main() -> None:
    _refuse_sockets()
    sys.setrecursionlimit(100_000)  # deep recursion is common in judge solutions
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "stdin":
        _run_script(path)
    else:
        wanted = sys.argv[5] if len(sys.argv) > 5 else None
        _call(path, sys.argv[3], sys.argv[4], wanted)


if __name__ == "__main__":
    main()
