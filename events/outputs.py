"""Files InquiTree writes where a user points it (``report --out DIR``, ``--out FILE``): never
through a link that is already there. A file is written under a new, unguessable name in its
folder (created with ``O_EXCL | O_NOFOLLOW``) and renamed over the target, which replaces a link
at that name instead of writing to where it points; an output folder that is a link, or that
belongs to another user, is refused, and so is a link among the folders the tool makes inside it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from inquitree.events.errors import InquiTreeError


class OutputRefused(InquiTreeError):
    """An output folder or file the tool will not write: a link, or another user's folder."""


def output_folder(path: str | Path, *, what: str = "--out") -> Path:
    """``path`` as a folder to write into: made if it does not exist; refused when it is a symbolic
    link or, on POSIX, not owned by this user."""
    folder = Path(path).expanduser()
    if folder.is_symlink():
        raise OutputRefused(f"{what} {folder}: it is a symbolic link; name the folder itself")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputRefused(f"{what} {folder}: cannot make the folder: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise OutputRefused(f"{what} {folder}: not a folder")
    if hasattr(os, "getuid") and folder.stat().st_uid != os.getuid():
        raise OutputRefused(f"{what} {folder}: the folder belongs to another user; write into a folder of your own")
    return folder


def inner_folder(folder: Path, name: str) -> Path:
    """``folder/name`` made as a folder, refused if a link is already there."""
    inner = folder / name
    if inner.is_symlink():
        raise OutputRefused(f"{inner}: it is a symbolic link; remove it, or write the output elsewhere")
    inner.mkdir(exist_ok=True)
    return inner


def write_file(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` without following a link at ``path``: into a new file beside it,
    then renamed over it (atomically: a reader sees the old file or the new one)."""
    target = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target
