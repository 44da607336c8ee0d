"""Progress of long operations: the callback the API takes, and the bar the CLI shows.

Every long operation (erase of a big person, export, import, bulk write, ``db upgrade``, key
rotation, reindex, consolidate) takes ``progress=``, a function of ``(done, total)`` called
after each step with counts only (never content); ``total`` is what the operation knows it has
to do when it starts. The CLI passes the callback :func:`bar` returns, a tqdm bar on standard
error that draws only on a terminal.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from tqdm import tqdm

from mainsdk_memory._errors import InvalidInputError

__all__ = ["Held", "Progress", "bar", "checked"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: how many steps are done of how many."""


def checked(progress: object) -> Progress | None:
    """``progress`` if it is a callable or ``None``, else :class:`InvalidInputError`."""
    if progress is not None and not callable(progress):
        raise InvalidInputError("progress is a function of (done, total), or None.")
    return progress


@contextlib.contextmanager
def bar(description: str, *, unit: str = "memories") -> Iterator[Progress]:
    """A progress callback drawing a bar on standard error while the block runs.

    The bar is drawn only when standard error is a terminal (tqdm's ``disable=None``), so
    logs and pipes get no control characters; it is closed when the block ends.
    """
    with tqdm(desc=description, unit=f" {unit}", file=sys.stderr, disable=None,
              dynamic_ncols=True, leave=True) as shown:

        def update(done: int, total: int) -> None:
            if shown.total != total:
                shown.total = total
            shown.update(done - shown.n)

        yield update


class Held:
    """A progress callback whose exception waits until the operation is done (an erase must
    reach its receipt): the first exception it raises stops it being called, and
    :meth:`raise_pending` raises it afterwards."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._error: Exception | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._progress is None or self._error is not None:
            return
        try:
            self._progress(done, total)
        except Exception as exc:
            self._error = exc

    def raise_pending(self) -> None:
        """Raise what the callback raised, if it did."""
        if self._error is not None:
            raise self._error
