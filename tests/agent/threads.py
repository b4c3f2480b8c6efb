"""Running one worker per thread in the concurrency tests, with the workers' exceptions surfaced to the test."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_threads(worker: Callable[[int], None], n: int) -> list[BaseException]:
    """Run ``worker(i)`` for i in 0..n-1, each on its own thread; return what they raised."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            worker(i)
        except BaseException as e:  # surfaced by the caller
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors
