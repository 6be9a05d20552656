"""The page and its assets, shipped inside the package (no build step).

One page serves both `serve` (ask and watch) and `view` (browse an evaluation run); it
asks `/api/mode` which one it is in.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles


def static_dir() -> Path:
    """The folder of index.html, app.js and style.css inside the installed package."""
    return Path(str(resources.files("search_o1.serve").joinpath("static")))


async def _index(request: Request) -> Response:
    # no-cache: the page is tiny, and a stale copy after an upgrade would confuse.
    return FileResponse(static_dir() / "index.html", headers={"Cache-Control": "no-cache"})


def page_routes() -> list[BaseRoute]:
    return [
        Route("/", _index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=static_dir()), name="static"),
    ]
