"""A disk that fills while `index build` or `cache export` writes: one line saying so,
exit 2, nothing half-written left behind (eval's own full disk is in
test_eval_attacks.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.e2e.eval_support import EXE, can_mount_tmpfs

from search_o1.cache import Cache

SCRIPT = """
set -u
mount -t tmpfs -o size=8k tmpfs "$DISK"
"$EXE" index build "$WORK/big.jsonl" -o "$DISK/idx" > /dev/null 2> "$WORK/index.err"
echo $? > "$WORK/index.rc"
"$EXE" cache export "$DISK/e.jsonl" --cache-path "$WORK/c.sqlite" > /dev/null 2> "$WORK/export.err"
echo $? > "$WORK/export.rc"
ls -A "$DISK" > "$WORK/left"
"""


@pytest.mark.skipif(bool(can_mount_tmpfs()), reason=can_mount_tmpfs() or "-")
def test_index_build_and_cache_export_on_a_full_disk(tmp_path: Path) -> None:
    # A real full file system: an 8 KB tmpfs in a private mount namespace.
    with (tmp_path / "big.jsonl").open("w") as f:
        for i in range(2000):
            f.write(json.dumps({"id": str(i), "text": f"word{i} lorem ipsum dolor " * 5}) + "\n")
    cache = Cache(tmp_path / "c.sqlite")
    for i in range(50):
        cache.put("page", {"url": f"http://p/{i}"}, f"http://p/{i}", {"text": "x" * 1000})
    cache.close()
    disk = tmp_path / "disk"
    disk.mkdir()
    env = {**os.environ, "DISK": str(disk), "WORK": str(tmp_path), "EXE": str(EXE)}
    env["SEARCH_O1_INDEX_CACHE"] = str(tmp_path / "indexes")
    subprocess.run(["unshare", "-m", "sh", "-c", SCRIPT], env=env, check=True, timeout=120)
    for name in ("index", "export"):
        err = (tmp_path / f"{name}.err").read_text().strip()
        assert (tmp_path / f"{name}.rc").read_text().strip() == "2", err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith("error: the disk is full") and "free space and rerun" in err
    assert (tmp_path / "left").read_text().split() == []  # no half index, no .part
