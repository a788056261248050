"""Special files where a regular file is expected: refused with a message naming the file, never a hang.

Pass rule: `read_regular` returns or raises UnsafeFile within the test's lifetime (a FIFO never blocks
the open), and the message names the path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.safeio import UnsafeFile, read_regular

pytestmark = pytest.mark.adversarial("bad-inputs")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _loop(path: Path) -> None:
    os.symlink(path.name + ".b", path)
    os.symlink(path.name, path.with_name(path.name + ".b"))


def _dev_zero(path: Path) -> None:
    os.symlink("/dev/zero", path)


def _too_large(path: Path) -> None:
    path.write_bytes(b"x" * 2048)


@pytest.mark.parametrize("plant", [_fifo, _directory, _loop, _dev_zero, _too_large])
def test_special_file_is_refused_by_name(tmp_path: Path, plant) -> None:
    target = tmp_path / "recipes.json"
    plant(target)
    with pytest.raises(UnsafeFile) as caught:
        read_regular(target, 1024, what="recipes.json")
    assert str(target) in str(caught.value)


def test_symlink_refused_when_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    os.symlink("real", tmp_path / "link")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        read_regular(tmp_path / "link", 1024, follow_symlinks=False)
    assert read_regular(tmp_path / "real", 1024) == b"x"
