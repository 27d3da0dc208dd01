"""Audio files under the data root: atomic copies, checksums, paths that cannot escape."""

from __future__ import annotations

import hashlib
import os

import pytest

from storage.files import (
    ChecksumMismatch,
    FileConflict,
    MissingFile,
    UnsafePath,
    default_data_root,
    normalize_relpath,
    resolve,
    store_file,
    verify,
)


def test_store_copies_and_returns_relative_path_and_sha256(tmp_path, speech_files):
    root = tmp_path / "data"
    src = speech_files["stereo"]
    relpath, sha = store_file(src, "sessions/7/./two_channel.wav", root)
    assert relpath == "sessions/7/two_channel.wav"
    assert sha == hashlib.sha256(src.read_bytes()).hexdigest()
    assert (root / relpath).read_bytes() == src.read_bytes()
    assert sorted(p.name for p in (root / "sessions/7").iterdir()) == ["two_channel.wav"]  # no temp file left
    assert verify(relpath, sha, root) == (root / relpath).resolve()


def test_storing_the_same_file_again_is_a_no_op(tmp_path, speech_files):
    first = store_file(speech_files["mono"], "a/user.wav", tmp_path)
    mtime = (tmp_path / "a/user.wav").stat().st_mtime_ns
    assert store_file(speech_files["mono"], "a/user.wav", tmp_path) == first
    assert (tmp_path / "a/user.wav").stat().st_mtime_ns == mtime


def test_refuses_to_overwrite_a_different_file(tmp_path, speech_files):
    store_file(speech_files["mono"], "a/clip.wav", tmp_path)
    with pytest.raises(FileConflict, match="a different file is already stored at 'a/clip.wav'"):
        store_file(speech_files["stereo"], "a/clip.wav", tmp_path)
    assert (tmp_path / "a/clip.wav").read_bytes() == speech_files["mono"].read_bytes()


def test_missing_source(tmp_path):
    with pytest.raises(MissingFile, match="no such file"):
        store_file(tmp_path / "nope.wav", "x.wav", tmp_path)


def test_verify_detects_changed_and_missing_files(tmp_path, speech_files):
    relpath, sha = store_file(speech_files["mono"], "clips/c.wav", tmp_path)
    with pytest.raises(ChecksumMismatch, match=f"has sha256 {sha}, expected 0{{64}}$"):
        verify(relpath, "0" * 64, tmp_path)
    data = bytearray((tmp_path / relpath).read_bytes())
    data[-1] ^= 0xFF  # one flipped bit in the last sample
    (tmp_path / relpath).write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatch, match="clips/c.wav"):
        verify(relpath, sha, tmp_path)
    (tmp_path / relpath).unlink()
    with pytest.raises(MissingFile, match="'clips/c.wav' is missing"):
        verify(relpath, sha, tmp_path)


@pytest.mark.parametrize("bad", ["../outside.wav", "a/../../outside.wav", "/etc/passwd", "", ".", "..\\x.wav"])
def test_paths_escaping_the_root_are_refused(tmp_path, speech_files, bad):
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(UnsafePath):
        resolve(bad, root)
    with pytest.raises(UnsafePath):
        store_file(speech_files["mono"], bad, root)
    assert not (tmp_path / "outside.wav").exists()


def test_symlink_out_of_the_root_is_refused(tmp_path, speech_files):
    root, outside = tmp_path / "data", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(UnsafePath, match="outside the data root"):
        store_file(speech_files["mono"], "link/x.wav", root)
    assert list(outside.iterdir()) == []


def test_normalized_paths():
    assert normalize_relpath("a//b/./c.wav") == "a/b/c.wav"
    assert normalize_relpath("a\\b.wav") == "a/b.wav"


def test_data_root_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TURNTAKING_DATA", str(tmp_path))
    assert default_data_root() == tmp_path
    monkeypatch.delenv("TURNTAKING_DATA")
    assert default_data_root().name == "data" and (default_data_root().parent / "storage").is_dir()


def test_a_row_without_a_file_is_a_missing_file_not_a_type_error(tmp_path):
    # clips seeded as voice activity only have no path (analysis demo --no-audio)
    with pytest.raises(MissingFile, match="no audio file is stored"):
        verify(None, None, tmp_path)
