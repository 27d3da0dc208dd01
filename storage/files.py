"""Audio files on disk under a data root; the database keeps their relative paths and sha256.

The data root is `TURNTAKING_DATA` if set, else `data/` in the project root. Paths stored in the
database are POSIX-style and relative to it, so a data directory can be moved or mounted
elsewhere without touching the database.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class StorageFileError(ValueError):
    """A stored file is missing, differs from its checksum, or its path is not allowed."""


class UnsafePath(StorageFileError):
    pass


class MissingFile(StorageFileError):
    pass


class ChecksumMismatch(StorageFileError):
    pass


class FileConflict(StorageFileError):
    pass


def default_data_root() -> Path:
    return Path(os.environ.get("TURNTAKING_DATA") or PROJECT_ROOT / "data")


# Copies made for the researcher's browser (Gradio's file cache, built reports and dataset exports)
# live here, under the data root, readable by the app's user only: an erasure empties it, since
# any of them may hold the person erased (storage.erasure).
CACHE_DIR = ".cache"


def private_cache(data_root: Path | str, name: str) -> Path:
    """The folder `name` of the data root's cache, made if missing, mode 0700."""
    folder = Path(data_root) / CACHE_DIR / name
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (folder.parent, folder):
        path.chmod(0o700)
    return folder


def session_dir(session_id: int) -> str:
    """The folder of a conversation session's files (its call recording, timing and network
    logs, the listener's recording): everything of the call, for its erasure too."""
    return f"sessions/{session_id}"


def sha256_file(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def normalize_relpath(relpath: str | os.PathLike) -> str:
    """`relpath` as the POSIX string stored in the database; refuses absolute or escaping paths."""
    text = os.fspath(relpath).replace("\\", "/")
    path = PurePosixPath(text)
    if not text or text in (".", "/"):
        raise UnsafePath(f"empty file path {text!r}")
    if path.is_absolute():
        raise UnsafePath(f"file path {text!r} must be relative to the data root")
    parts = [p for p in path.parts if p != "."]
    if ".." in parts:
        raise UnsafePath(f"file path {text!r} must not contain '..'")
    return "/".join(parts)


def resolve(relpath: str | os.PathLike, data_root: Path | str | None = None) -> Path:
    """Absolute path of `relpath` under the data root; refuses paths that leave it (also by symlink)."""
    root = Path(data_root if data_root is not None else default_data_root()).resolve()
    path = (root / normalize_relpath(relpath)).resolve()
    if not path.is_relative_to(root):
        raise UnsafePath(f"file path {os.fspath(relpath)!r} leads outside the data root {root}")
    return path


def store_file(src: Path | str, relpath: str | os.PathLike, data_root: Path | str | None = None) -> tuple[str, str]:
    """Copy `src` to `relpath` under the data root; returns (relpath, sha256).

    The copy appears atomically (temporary file, then link into place). Storing the same content
    again is a no-op; a different file already at `relpath` is refused with FileConflict.
    """
    src = Path(src)
    if not src.is_file():
        raise MissingFile(f"cannot store {src}: no such file")
    relpath = normalize_relpath(relpath)
    dest = resolve(relpath, data_root)
    checksum = sha256_file(src)
    if dest.exists():
        _check_same(dest, checksum, relpath)
        return relpath, checksum
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
            shutil.copyfileobj(f, out)
            out.flush()
            os.fsync(out.fileno())
        if sha256_file(tmp) != checksum:
            raise ChecksumMismatch(f"{src} changed while it was being copied to {relpath}")
        try:
            # link() fails if dest exists: a concurrent writer cannot be overwritten silently.
            os.link(tmp, dest)
        except FileExistsError:
            _check_same(dest, checksum, relpath)
    finally:
        tmp.unlink(missing_ok=True)
    return relpath, checksum


def verify(relpath: str | os.PathLike | None, sha256: str | None, data_root: Path | str | None = None) -> Path:
    """Absolute path of a stored file after checking it exists and has the expected sha256.

    A row without a file (e.g. a clip seeded as voice activity only) is a MissingFile too."""
    if relpath is None or sha256 is None:
        raise MissingFile("no audio file is stored for this item")
    path = resolve(relpath, data_root)
    if not path.is_file():
        raise MissingFile(f"stored file {os.fspath(relpath)!r} is missing (looked for {path})")
    actual = sha256_file(path)
    if actual != sha256:
        raise ChecksumMismatch(f"stored file {os.fspath(relpath)!r} has sha256 {actual}, expected {sha256}")
    return path


def _check_same(dest: Path, checksum: str, relpath: str) -> None:
    if sha256_file(dest) != checksum:
        raise FileConflict(f"a different file is already stored at {relpath!r}; refusing to overwrite it")
