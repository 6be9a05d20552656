"""A method a package declares (entry point group `search_o1.methods`) is offered by
`ask --method` and `eval --method`, in a real `search-o1` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.plugin_dist import METHOD_ENTRY_POINTS, make_plugin

EXE = Path(sys.executable).parent / "search-o1"


def test_plugin_methods_show_in_method_choices(tmp_path: Path) -> None:
    site = make_plugin(tmp_path / "site", entry_points=METHOD_ENTRY_POINTS)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    for command in ("ask", "eval"):
        out = subprocess.run(
            [str(EXE), command, "--help"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
            cwd=tmp_path,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        choices = out.stdout.replace(" ", "").replace("\n", "")
        assert "rag-agent|search-o1|misnamed|terse" in choices, command
