"""What the `eval` CLI tests share: the installed command run as a subprocess, one `eval`
run read back as its metrics, JSONL writing and a scripted loopback model server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.eval_support import responder
from tests.servers.openai_server import openai_server

EXE = Path(sys.executable).with_name("search-o1")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(cwd / "idx")}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def direct_flags(url: str) -> list[str]:
    """The flags that point `eval` or `ask` at the loopback model, answering directly."""
    model = ["--base-url", url, "--model", "fake-model", "--chat-template", "chatml"]
    return [*model, "--method", "direct"]


def evaluate(
    url: str, tmp: Path, dataset: str, out: str, *extra: str
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    done = cli(
        "eval",
        "--dataset",
        dataset,
        "--out",
        out,
        *direct_flags(url),
        "--no-progress",
        *extra,
        cwd=tmp,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((tmp / out / "metrics.json").read_text()), done


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def serve(answers: Mapping[str, str], **kw: Any) -> Any:
    respond: Callable[[dict[str, Any]], str] = responder(answers, **kw)  # type: ignore[assignment]
    return openai_server(respond, return_stop=False)


def can_mount_tmpfs() -> str:
    """'' when this process may mount a tmpfs in a private mount namespace, else why not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no unshare command"
    probe = subprocess.run(
        [unshare, "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt 2>&1"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs here: {(probe.stdout + probe.stderr).strip()[:200]}"
    return ""
