"""The app of `search-o1 view RUN_DIR`: the page, over an evaluation run's files.

`/api/run` lists the items (scores, finish reasons, searches, tokens, latency) with the
run's metrics and config; `/api/run/items/{n}` is one item's full record and trace.
results.jsonl is re-read when it changes, so a run still in progress can be watched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from search_o1.errors import InputFileError
from search_o1.eval import runfiles
from search_o1.serve.guard import BrowserGuard, host_names
from search_o1.serve.page import page_routes


@dataclass
class RunFiles:
    """The records of one run directory, reloaded when results.jsonl changes."""

    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    _stamp: tuple[int, int] | None = None

    def load(self) -> list[dict[str, Any]]:
        results = self.path / runfiles.RESULTS
        stat = results.stat() if results.exists() else None
        stamp = (stat.st_mtime_ns, stat.st_size) if stat else (0, 0)
        if stamp != self._stamp:
            self.records = list(runfiles.read_records(self.path).values())
            self._stamp = stamp
        return self.records

    def json_file(self, name: str) -> dict[str, Any] | None:
        """metrics.json or config.json; None when absent (a run still going has none)."""
        try:
            data = json.loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def check_run_dir(path: Path) -> None:
    """Refuse, with a one-line reason, a folder that holds no evaluation run."""
    if not path.is_dir():
        raise InputFileError(str(path), "no such folder")
    if not (path / runfiles.RESULTS).exists() and not (path / runfiles.CONFIG).exists():
        raise InputFileError(str(path), f"not a run directory (no {runfiles.RESULTS})")


def summary_row(index: int, record: dict[str, Any]) -> dict[str, Any]:
    """What the item list shows; the trace stays behind until an item is opened."""
    searches = record.get("searches")
    trace = record.get("trace") or {}
    return {
        "index": index,
        "id": record.get("id"),
        "question": record.get("question"),
        "gold": record.get("gold"),
        "prediction": record.get("prediction"),
        "metrics": record.get("metrics") or {},
        "finish_reason": record.get("finish_reason"),
        "searches": len(searches) if isinstance(searches, list) else searches,
        "n_searches": record.get("n_searches"),
        "tokens": record.get("tokens"),
        "latency_s": record.get("latency_s", trace.get("latency_s")),
    }


def create_view_app(
    run_dir: Path, *, hosts: Iterable[str] | None = None, cors_origins: Sequence[str] = ()
) -> Starlette:
    """The view app over `run_dir`; `hosts` and `cors_origins` as for `serve` (guard.py)."""
    files = RunFiles(Path(run_dir))

    async def mode(request: Request) -> Response:
        return JSONResponse({"mode": "view", "run": files.path.name})

    async def run(request: Request) -> Response:
        records = files.load()
        metrics = files.json_file(runfiles.METRICS)
        return JSONResponse(
            {
                "name": files.path.name,
                "metrics": metrics,
                "primary": (metrics or {}).get("primary"),
                "config": files.json_file(runfiles.CONFIG),
                "items": [summary_row(i, r) for i, r in enumerate(records)],
            }
        )

    async def item(request: Request) -> Response:
        records = files.load()
        index = int(request.path_params["index"])
        if not 0 <= index < len(records):
            raise HTTPException(404, f"no item {index}")
        return JSONResponse({"index": index, **records[index]})

    routes = [
        Route("/api/mode", mode, methods=["GET"]),
        Route("/api/run", run, methods=["GET"]),
        Route("/api/run/items/{index:int}", item, methods=["GET"]),
        *page_routes(),
    ]
    app = Starlette(routes=routes)
    allowed = host_names("127.0.0.1") if hosts is None else hosts
    app.add_middleware(BrowserGuard, hosts=allowed, cors_origins=cors_origins)
    return app
