"""Checkpoint files named and kept as DeePMD-kit does (spec §9.5).

`model.ckpt-<step>.pt` (written atomically), a relative symlink `model.ckpt.pt` to the newest, a text file
`checkpoint` naming it, and only the newest `max_ckpt_keep` numbered files kept.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from deeppot.io.dp_file import atomic_write
from deeppot.io.model_file import save_checkpoint

log = logging.getLogger(__name__)


class CheckpointManager:
    def __init__(self, save_ckpt: str, save_dir: str | None, max_keep: int, workdir: Path) -> None:
        prefix = Path(save_ckpt)
        self.dir = Path(workdir, save_dir) if save_dir else Path(workdir, prefix.parent)
        self.name = prefix.name.removesuffix(".pt")
        self.max_keep = max_keep
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, step: int) -> Path:
        return self.dir / f"{self.name}-{step}.pt"

    def save(self, step: int, state: dict[str, Any]) -> Path:
        path = self.path(step)
        save_checkpoint(path, state)
        self._point_to(path)
        self._prune(step)
        log.info("Saved model to %s", path)
        return path

    def _point_to(self, path: Path) -> None:
        link = self.dir / f"{self.name}.pt"
        tmp = self.dir / f".{self.name}.pt.tmp-link"
        tmp.unlink(missing_ok=True)
        try:
            os.symlink(path.name, tmp)
            os.replace(tmp, link)
        except OSError:  # filesystems without symlinks: keep a copy, as DeePMD-kit does on Windows
            atomic_write(link, lambda t: Path(t).write_bytes(path.read_bytes()))
        atomic_write(self.dir / "checkpoint", lambda t: Path(t).write_text(f"{path.name}\n"))

    def numbered(self) -> list[tuple[int, Path]]:
        pattern = re.compile(rf"^{re.escape(self.name)}-(\d+)\.pt$")
        found = [(int(m.group(1)), p) for p in self.dir.iterdir() if (m := pattern.match(p.name))]
        return sorted(found)

    def _prune(self, current: int) -> None:
        if self.max_keep < 1:
            return
        files = self.numbered()
        # files from an older, longer run (step > current) go first, then the oldest
        stale = [p for s, p in files if s > current]
        fresh = [p for s, p in files if s <= current]
        doomed = stale + fresh[: max(0, len(fresh) - self.max_keep)]
        for p in doomed[: max(0, len(files) - self.max_keep)]:
            p.unlink(missing_ok=True)


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file from a path that may be a folder holding `checkpoint`, or lack the .pt suffix."""
    path = Path(path)
    if path.is_dir():
        pointer = path / "checkpoint"
        if not pointer.is_file():
            raise FileNotFoundError(f"{path}: no 'checkpoint' file in this folder; give the .pt file instead")
        return path / pointer.read_text().strip()
    if not path.suffix and not path.exists():
        path = path.with_suffix(".pt")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    return path
