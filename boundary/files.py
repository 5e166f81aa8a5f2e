"""Files InquiTree reads and writes for a user.

Files it writes where a user points it (``report --out DIR``, ``--out FILE``): never through a link
that is already there. A file is written under a new, unguessable name in its folder (created with
``O_EXCL | O_NOFOLLOW``) and renamed over the target, which replaces a link at that name instead of
writing to where it points; an output folder that is a link, or that belongs to another user, is
refused, and so is a link among the folders the tool makes inside it. Files it reads from a user or
another lab (``read_file``): regular files only, read once, to a size the reader names, so that no
file decides how much memory or time a read takes. And no file name is built from a stored or
imported name without ``confined``, which refuses any name that would leave its folder, whatever
the grammar said when the name was stored.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
import unicodedata
from pathlib import Path

from inquitree.boundary.errors import BadName, InquiTreeError
from inquitree.boundary.text import shown


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


class OpenFolder:
    """A folder opened once and written relative to its open descriptor (``dir_fd``): a link put
    in place of the folder while a run writes into it (the report's ``episodes/``, 200 pages) is
    never followed, since every file goes where the folder was when it was opened. Each file is
    written as :func:`write_file` writes one: under a new name, then renamed over its own."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(self.path, flags)
        except OSError as exc:
            raise OutputRefused(f"{self.path}: cannot open the folder: {exc.strerror or exc}") from None

    def write(self, name: str, data: bytes | str) -> Path:
        """``data`` as the file ``name`` (a plain file name) in this folder."""
        if not _plain_file_name(name):
            raise BadName(f"{shown(name)} cannot name a file in {self.path}: it is not a plain file name")
        raw = data.encode("utf-8") if isinstance(data, str) else data
        try:
            mode = os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise OutputRefused(f"{self.path / name}: not a file; not written")
        temporary = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temporary, flags, 0o644, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=self.fd)
            raise
        return self.path / name

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "OpenFolder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_opened(path: str | Path) -> "io.TextIOWrapper":
    """``path`` opened for appending text, refusing a link at its name (``O_NOFOLLOW``): a log
    written through the returned file all run long goes to the file it opened, whatever is put in
    its place later (extract's call log was opened by name at every line, and followed a link
    planted during the run out of ``--out``)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise OutputRefused(f"{path}: cannot be written: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputRefused(f"{path}: not a regular file; not written")
    return os.fdopen(fd, "a", encoding="utf-8")


def write_file(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` without following a link at ``path``: into a new file beside it,
    then renamed over it (atomically: a reader sees the old file or the new one). A character
    device or a FIFO already at ``path`` (``--out /dev/null``, a pipe) is written into, never
    replaced (run as root, the rename replaced the machine's /dev/null with a regular file); a
    socket or a block device there is refused."""
    target = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputRefused(f"{target}: cannot be written: {exc.strerror or exc}") from None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        return _write_into(target, raw)
    if mode is not None and (stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)):
        raise OutputRefused(f"{target}: a {'socket' if stat.S_ISSOCK(mode) else 'block device'}; name a file")
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


def _write_into(target: Path, raw: bytes) -> Path:
    """``raw`` written into the character device or FIFO at ``target``, opened without following a
    link and checked again once open (whatever took its place in between is not written); a FIFO
    that no one reads is refused rather than waited on."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        why = "a FIFO that no one reads" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise OutputRefused(f"{target}: cannot be written: {why}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise OutputRefused(f"{target}: changed while it was opened; not written")
        os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return target


class InputRefused(InquiTreeError):
    """A file the tool will not read: not a regular file, larger than its limit, or unreadable."""


def read_file(path: str | Path, limit: int, *, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path`` (links followed), read once and at most ``limit``:
    opened without waiting (a named pipe with no writer is refused, not waited on), checked on the
    open descriptor (a device such as /dev/zero, a folder or a socket is refused before a byte is
    read), and read to ``limit`` + 1 bytes at most, so that a file that grows while it is read is
    refused too. Whoever needs the file's hash hashes these bytes, never a second read."""
    import stat

    shown_path = Path(path)
    try:
        fd = os.open(shown_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputRefused(f"{what} {shown_path}: cannot read it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else "a device or a socket"
            raise InputRefused(f"{what} {shown_path}: it is {kind}, not a regular file; refused")
        if info.st_size > limit:
            raise InputRefused(f"{what} {shown_path}: {info.st_size:,} bytes, over the limit of {limit:,}; refused")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise InputRefused(f"{what} {shown_path}: larger than {limit:,} bytes, the most it may hold; refused")
        return b"".join(chunks)
    finally:
        os.close(fd)


def finite_number(text: str) -> int:
    """A JSON integer as ``json.loads(..., parse_int=finite_number)`` reads it: one beyond float's range
    (a 400-digit price or rate) is refused as the file's error, never an OverflowError later."""
    if len(text.lstrip("-")) > 308:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits, beyond any number this file can hold")
    return int(text)


def confined(folder: str | Path, name: str, suffix: str = "") -> Path:
    """``folder/name+suffix``, refused unless it is a plain file name that stays inside ``folder``
    (no separator, no ``..``, no NUL or control character): for every file named after a stored
    or imported name."""
    base = Path(folder)
    if not _plain_file_name(name):
        raise BadName(f"{shown(name)} cannot name a file in {base}: it is not a plain file name")
    path = base / f"{name}{suffix}"
    root = base.resolve()
    if path.resolve().parent != root:
        raise BadName(f"{shown(name)} cannot name a file in {base}: it would leave the folder")
    return path


def _plain_file_name(name: str) -> bool:
    return (
        bool(name)
        and len(name) <= 200
        and name not in (".", "..")
        and not any(c in name for c in "/\\\x00")
        and all(unicodedata.category(c)[0] != "C" for c in name)
    )
