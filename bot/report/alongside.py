"""chart.png from a forked child, so that a second core shares a large report.

`ChartChild` is forked before the results are read, imports matplotlib while the parent reads and
compares (a third of a small report's time), then draws chart.png from the series the parent sends
it. Its wait draws the chart in the parent when the child failed, so an error is raised as it would
have been without a child. Where fork is not safe to use (not Linux) the parent draws it, in the same
order.
"""
from __future__ import annotations

import os
import pathlib
import pickle
import signal
import sys
import tempfile

FORK = sys.platform == "linux" and os.environ.get("RECIPE_BOT_REPORT_FORK", "1") != "0"


def _fork() -> int:
    sys.stdout.flush()  # nothing buffered before the fork is written twice
    sys.stderr.flush()
    return os.fork()


def _wait(pid: int) -> bool:
    """Whether the child exited 0."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


class ChartChild:
    """A child that imports matplotlib at once and draws chart.png when `draw` sends the series."""

    def __init__(self):
        self.pid: int | None = None
        self.job: tuple | None = None  # what was sent, to draw here if the child fails
        self.done = False
        if not FORK:
            return
        read, self.pipe = os.pipe()
        pid = _fork()
        if pid == 0:
            os.close(self.pipe)
            os._exit(_child(read))
        os.close(read)
        self.pid = pid

    def draw(self, series: list, path: pathlib.Path, title: str) -> None:
        """Hand the chart over (or draw it now without a child)."""
        from bot.report import chart

        self.job = (series, path, title)
        if self.pid is None:
            chart.write_png(series, path, title)
            self.done = True
            return
        # Through a file: the series of a large report are more than a pipe holds, and the child
        # may still be importing matplotlib; the pipe carries only the file's name.
        handle, name = tempfile.mkstemp(prefix="recipe-bot-chart-", suffix=".pickle")
        with os.fdopen(handle, "wb") as stream:
            pickle.dump(self.job, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.write(self.pipe, name.encode())
        self.close()

    def close(self) -> None:
        if self.pid is not None and self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None

    def wait(self) -> None:
        """Wait for the child (once); without a chart sent it stops, having drawn nothing."""
        if self.done:
            return
        self.done = True
        self.close()
        if self.pid is not None and self.job is None:  # the command ended before its chart
            os.kill(self.pid, signal.SIGKILL)
            _wait(self.pid)
            return
        if self.pid is not None and _wait(self.pid):
            return
        if self.job is not None:
            from bot.report import chart

            chart.write_png(*self.job)


def _child(read: int) -> int:
    """The chart child's life: matplotlib first, then the series (or end of input: nothing)."""
    name = b""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401 - imported now, used by write_png
        import matplotlib.figure  # noqa: F401

        from bot.report import chart

        while chunk := os.read(read, 4096):
            name += chunk
        if not name:
            return 0
        job_file = pathlib.Path(name.decode())
        with job_file.open("rb") as stream:
            series, path, title = pickle.load(stream)
        job_file.unlink()
        chart.write_png(series, path, title)
        return 0
    except BaseException:
        return 1
    finally:
        if name:
            pathlib.Path(name.decode()).unlink(missing_ok=True)
