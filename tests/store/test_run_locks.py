"""A run is alive while its process holds the lock in its work folder, and not after the
process is gone, however it ended (storage.store.run_locks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from storage.store.run_locks import (
    ALIVE,
    STARTING,
    STARTING_GRACE_S,
    dead_folders,
    hold_alive,
    is_alive,
    let_go,
)

HOLDER = """
import sys, time
from pathlib import Path
from storage.store.run_locks import hold_alive
hold_alive(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def test_a_run_is_alive_while_its_process_lives_and_dead_once_it_is_killed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_alive(folder)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    assert (folder / ALIVE).exists()  # the file stays; nobody holds it
    assert not is_alive(folder)


def test_a_folder_without_the_file_is_not_alive_and_a_let_go_run_is_not_either(
    tmp_path: Path,
) -> None:
    assert not is_alive(tmp_path / "never")
    fd = hold_alive(tmp_path / "mine")
    assert is_alive(tmp_path / "mine")  # another descriptor, even in this process
    let_go(fd)
    assert not is_alive(tmp_path / "mine")


def test_dead_folders_are_the_unlocked_ones_and_only_old_starts(tmp_path: Path) -> None:
    fd = hold_alive(tmp_path / "live")
    assert not list(tmp_path.glob(f"{STARTING}*"))  # renamed once locked
    let_go(hold_alive(tmp_path / "killed"))  # a run whose process is gone
    (tmp_path / "no-file").mkdir()  # e.g. emptied by hand
    young = tmp_path / f"{STARTING}young"
    old = tmp_path / f"{STARTING}old"
    young.mkdir()
    old.mkdir()
    long_ago = old.stat().st_mtime - STARTING_GRACE_S - 1
    os.utime(old, (long_ago, long_ago))
    (tmp_path / "a-file").touch()
    try:
        dead = sorted(folder.name for folder in dead_folders(tmp_path))
    finally:
        let_go(fd)
    assert dead == sorted(["killed", "no-file", old.name])
    assert dead_folders(tmp_path / "missing") == []
