"""Worker processes of the span readers (`storage.spans.block_reading`) end with their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

_PARENT = textwrap.dedent(
    """
    import sys, time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    from storage.spans.block_reading import _exit_with_parent, os

    def sleep_and_tell(path):
        with open(path, "w") as out:
            out.write(str(os.getpid()))
        time.sleep(60)

    if __name__ == "__main__":
        pool = ProcessPoolExecutor(
            1, mp_context=get_context("spawn"), initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )
        pool.submit(sleep_and_tell, sys.argv[1])
        time.sleep(60)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (
        Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "X"
    )
    return state not in ("Z", "X")


def test_a_worker_ends_when_its_parent_is_killed_outright(tmp_path: Path) -> None:
    """The parent killed with SIGKILL mid-task: its worker, busy in that task, is gone within
    a few seconds instead of waiting on a pipe nobody reads."""
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    told = tmp_path / "worker.pid"
    root = str(Path(__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    parent = subprocess.Popen([sys.executable, str(script), str(told)], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (told.exists() and told.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = int(told.read_text())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(worker)
    finally:
        parent.kill()


def test_block_buffers_are_used_again_only_once_nothing_holds_them(tmp_path: Path) -> None:
    """A block still held (by a job, a view, an export) is never handed out again; one let go
    is, and the blocks read into used buffers are the file's bytes, nothing left over from
    the block before (a longer one, a file's short last block)."""
    from storage.spans._line_blocks import BlockBuffers, line_blocks

    buffers = BlockBuffers()
    held = buffers.take(64)
    view = memoryview(buffers.take(64))  # a view (as Arrow's buffer keeps) holds its block
    assert buffers.take(64) is not held and buffers.take(64) is not view.obj
    view.release()
    first = buffers.take(32)
    assert len(first) == 32
    kept = id(held)
    del held
    assert {id(buffers.take(64)) for _ in range(3)} >= {kept}

    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    files[0].write_bytes(
        b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * (i % 37)) for i in range(400))
    )
    files[1].write_bytes(b"\xef\xbb\xbf" + b'{"short": 1}\n' * 3 + b'{"last": "no newline"}')
    expected = [(bytes(data), first) for f in files for data, first in line_blocks(f, 1000)]
    shared = BlockBuffers()
    got = []
    for f in files:
        for data, first in line_blocks(f, 1000, shared):
            got.append((bytes(data), first))  # a copy: the buffer is let go for the next block
    assert got == expected
    assert b"".join(data for data, _ in got[:-1]) == files[0].read_bytes()
    assert got[-1][0] == files[1].read_bytes()[3:]
    assert len(shared._buffers) <= 2  # each block let go before the next: one buffer or two
