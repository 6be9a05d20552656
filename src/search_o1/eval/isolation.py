"""Where a sandboxed program runs: a private mount, user, PID and network namespace.

A model's program must not read the user's files, write anywhere but its own empty
folder, reach the network, signal the evaluator, or outlive its test. Resource limits
and a socket check inside the interpreter do not stop any of that (a program can open
files, start a fresh interpreter, or call setsid), so the program runs under bubblewrap
(`bwrap`): a new root that holds only the system's program folders read-only, its own
folder read-write, an empty /tmp and /dev/shm (all three small and in memory), no
network but loopback, its own PID namespace (every process dies with the first one),
no capabilities and a new session.
Nothing of the user's home, the run directory or the datasets is in that root at all.

Where bubblewrap is missing or cannot make namespaces here, `find()` says what is
missing; the sandbox then refuses model code unless the caller accepts the risk.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
# System folders a Python program needs (interpreter, shared libraries); all read-only.
_SYSTEM = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin")
# The dynamic linker's cache, so libraries load as they do outside (no other /etc file).
_ETC = ("/etc/ld.so.cache", "/etc/localtime")


@dataclass(frozen=True)
class Isolation:
    """What the sandbox can wrap a program in on this machine.

    `name` is "bwrap" when the namespaces hold, "none" otherwise; `missing` then says why.
    """

    name: str
    bwrap: str | None = None
    missing: str = ""

    @property
    def holds(self) -> bool:
        return self.name == "bwrap"


def interpreter() -> str:
    """The real interpreter behind this one (a virtualenv's python is a link to it).

    The sandbox runs it with -I: only the standard library, which lives under its prefix.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def _readable_roots() -> list[str]:
    """Folders bound read-only: the system's, and the interpreter's own prefix."""
    roots = [p for p in _SYSTEM if os.path.lexists(p)]
    exe = interpreter()
    for extra in (sys.base_prefix, os.path.dirname(exe)):
        real = os.path.realpath(extra)
        if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            roots.append(real)
    return roots


def _bind_args(path: str) -> list[str]:
    """Mount `path` read-only at the same place; a link (merged /usr) stays a link."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    return ["--ro-bind", path, path]


def bwrap_args(
    bwrap: str,
    workdir: str,
    *,
    readonly: Sequence[str] = (),
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    scratch_mb: int = 16,
) -> list[str]:
    """The bwrap command line (up to the program) for a program working in `workdir`.

    `workdir`, /tmp and /dev/shm are fresh tmpfs folders of `scratch_mb` each, the only
    writable places: a tmpfs without a size takes half the machine's memory, uncounted by
    the program's memory limit, and a folder on disk could fill the disk. `inputs` (files
    in `workdir`) appear there read-only, `outputs` read-write; both are mount points, so
    the program cannot swap them for a link or a pipe that the evaluator would then read.
    `readonly` files (the harness) are visible read-only where they are.
    """
    args = [bwrap]
    for root in _readable_roots():
        args += _bind_args(root)
    for path in (*_ETC, *readonly):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    size = str(scratch_mb * 1024 * 1024)
    for folder in ("/tmp", "/dev/shm", workdir):
        args += ["--size", size, "--tmpfs", folder]
    for path in inputs:
        args += ["--ro-bind", path, path]
    for path in outputs:
        args += ["--bind", path, path]
    args += ["--chdir", workdir]
    args += ["--remount-ro", "/"]  # the new root itself (a tmpfs) takes no files either
    args += [
        "--unshare-all",  # user, PID, network, IPC, UTS and cgroup namespaces
        "--die-with-parent",  # the evaluator killing bwrap kills the whole namespace
        "--new-session",  # no terminal to inject keystrokes into
        "--cap-drop",
        "ALL",
    ]
    return args


@functools.cache
def _probe(bwrap: str) -> str:
    """'' when bwrap can run an interpreter in the namespaces here; otherwise why not."""
    with tempfile.TemporaryDirectory(prefix="search-o1-probe-") as workdir:
        cmd = [*bwrap_args(bwrap, workdir), interpreter(), "-I", "-c", "pass"]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return f"bubblewrap ({bwrap}) did not start: {e}"
    if done.returncode == 0:
        return ""
    why = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"bubblewrap cannot make namespaces here ({why[-1] if why else done.returncode})"


def find() -> Isolation:
    """The isolation this machine gives (looked up on PATH; probed once per bwrap)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Isolation("none", missing=f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    why = _probe(bwrap)
    if why:
        return Isolation("none", missing=why)
    return Isolation("bwrap", bwrap=bwrap)


def clear_cache() -> None:
    """Forget probe results (after installing bubblewrap, or in tests)."""
    _probe.cache_clear()
