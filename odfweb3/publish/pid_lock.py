"""One publisher at a time on this machine: a lock file holding the holder's pid.

Shared by both state homes (:mod:`.out_dir`: ``OUT_DIR/.publish.lock``; :mod:`.state_home`:
``<state dir>/<dataset>/<target>.lock``). Created exclusively (``O_EXCL``); a lock whose pid
is not a live process (a killed publisher) or is our own (an earlier, failed run in this
process) is taken over. Not an ``flock``: the pid in the file is what the refusal names, and
a lock left by a process killed with SIGKILL must not need a manual step when the pid is
gone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from odfweb3.errors import ConflictError

__all__ = ["PidLock"]


class PidLock:
    """A pid lock file at ``path``; ``where`` opens the refusal's line (what is locked)."""

    def __init__(self, path: Path, where: str) -> None:
        self.path = path
        self.where = where
        self.held = False

    def acquire(self) -> None:
        """Take the lock (a second call while held does nothing).

        Raises:
            ConflictError: another live process holds it (exit 75).
        """
        if self.held:
            return
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                try:
                    pid = int(self.path.read_text("ascii").strip() or "0")
                except (OSError, ValueError):
                    pid = 0
                if pid and pid != os.getpid() and _alive(pid):
                    raise ConflictError(
                        f"{self.where}: another publisher (pid {pid}) is writing here; "
                        f"wait for it, or remove {self._shown} if no such process runs"
                    ) from None
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()  # stale (dead or our own earlier, failed run)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self.held = True
            return
        raise ConflictError(f"{self.where}: could not take {self._shown}; publish again")

    def release(self) -> None:
        """Drop the lock if held."""
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    @property
    def _shown(self) -> str:
        # OUT_DIR's lock sits in the directory named by ``where``: its name says enough.
        return self.path.name if str(self.path.parent) == self.where else str(self.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
