"""A run is alive while its process holds the lock in its work folder, and not after the
process is gone, however it ended (storage.run_locks)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from storage.run_locks import ALIVE, hold_alive, is_alive, let_go

HOLDER = """
import sys, time
from pathlib import Path
from storage.run_locks import hold_alive
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
