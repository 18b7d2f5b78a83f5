"""The columns of the progress bars a wait draws (``cli.progress``): loaded where a
wait starts, with Rich's progress machinery."""

from __future__ import annotations

from rich.console import RenderableType
from rich.progress import ProgressColumn, Task
from rich.spinner import Spinner
from rich.text import Text

from photo_pipeline.cli.shown import counted


class ItemCountColumn(ProgressColumn):
    """``12/40 30%`` once a job's items are known; before (a scan still listing its
    folder, a ``similar`` waiting for thumbnails) a spinner and the count so far,
    never ``0/?``; ``no items`` for a job that ended with none."""

    def __init__(self) -> None:
        super().__init__()
        self._spinner = Spinner("dots")

    def render(self, task: Task) -> RenderableType:
        progress = task.fields.get("items")
        total = progress["total"] if progress else 0
        done = progress["done"] if progress else 0
        if total:
            return Text(f"{done:,}/{total:,} {100 * done // total:>3}%", style="progress.download")
        if task.fields.get("ended"):
            return Text("no items", style="progress.download")
        frame = self._spinner.render(task.get_time())
        spinning = frame if isinstance(frame, Text) else Text("…")
        return Text.assemble(spinning, f" {counted(done, 'items')} so far")
