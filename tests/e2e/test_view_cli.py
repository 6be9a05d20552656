"""`search-o1 view` as a user runs it: a foreign Host is refused unless --allowed-host
names it, and a page on another origin unless --cors-origin does."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import httpx
from tests.e2e.serve_cli_support import EXE, free_port
from tests.serve_support import write_run_dir


def _view(run: Path, port: int, *flags: str) -> subprocess.Popen[str]:
    cmd = [str(EXE), "view", str(run), "--port", str(port), *flags]
    return subprocess.Popen(cmd, text=True, stderr=subprocess.PIPE)


def _get(url: str, proc: subprocess.Popen[str], **headers: str) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            return httpx.get(url, headers=headers)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_view_refuses_foreign_hosts_and_origins_unless_allowed(tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run")
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/run"
    proc = _view(run, port)
    try:
        assert _get(url, proc).status_code == 200
        foreign = _get(url, proc, Host=f"evil.example:{port}")
        assert foreign.status_code == 421 and "--allowed-host" in foreign.text
        other = _get(url, proc, Origin="http://evil.example")
        assert other.status_code == 403 and "--cors-origin" in other.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/run"
    flags = ("--allowed-host", "runs.example", "--cors-origin", "http://app.example")
    proc = _view(run, port, *flags)
    try:
        assert _get(url, proc, Host="runs.example").status_code == 200
        allowed = _get(url, proc, Origin="http://app.example")
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_port_in_use_is_one_line_before_anything_is_announced(tmp_path: Path) -> None:
    """view announced the address, then uvicorn's own ERROR line, exit 3; serve says one
    line and exits 2, and view now does too. --port 0 announces the port it got."""
    run = write_run_dir(tmp_path / "run")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(EXE), "view", str(run), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert (
        done.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    proc = _view(run, 0)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        announced = re.fullmatch(r"search-o1: viewing \S+ on http://127\.0\.0\.1:(\d+)/\n", line)
        assert announced and announced.group(1) != "0", line
        assert _get(f"http://127.0.0.1:{announced.group(1)}/api/run", proc).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
