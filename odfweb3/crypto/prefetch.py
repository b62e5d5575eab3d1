"""Run a generator on a helper thread, a bounded number of items ahead of its consumer.

Encrypted publishes read each object once: the plaintext is hashed (ODF hash, SHA3-256)
as it is read, encrypted (AES-256-GCM), then hashed again as ciphertext into CIDs and
written. hashlib and file reads release the GIL on large buffers, so on two cores the
read + hash + encrypt side can run beside the CID hashing and writing side
(bench/bench_encrypt.py, bench/RESULTS.md "Issue 7").

Memory stays bounded: at most ``depth`` items wait in the queue, plus one being made and
one being consumed. The helper thread never holds a reference to the :class:`Prefetcher`,
so dropping an unfinished prefetcher (or calling :meth:`Prefetcher.stop`) ends the thread
within one poll interval. Exceptions raised by the generator are re-raised to the
consumer, in order, after the items made before them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Final, Generic, TypeVar

__all__ = ["Prefetcher"]

T = TypeVar("T")

_POLL_SECONDS: Final = 0.05


class _End:
    """Queued after the last item."""


_END: Final = _End()


def _produce(
    source: Iterator[T], items: queue.Queue[T | _End | BaseException], stop: threading.Event
) -> None:
    """The helper thread: move ``source``'s items into ``items`` until done or stopped."""

    def put(item: T | _End | BaseException) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    try:
        for item in source:
            if not put(item):
                return
    except BaseException as exc:  # handed to the consumer, which re-raises it
        put(exc)
        return
    put(_END)


class Prefetcher(Generic[T]):
    """Iterate over ``source`` on a helper thread, at most ``depth`` items ahead.

    Args:
        source: the generator to run; only the helper thread touches it (and whatever it
            reads from) until the prefetcher is exhausted or stopped.
        depth: how many finished items may wait for the consumer.
        name: the helper thread's name (for debuggers and ``threading.enumerate``).
        stop: the event that stops the helper thread; give one when ``source`` itself
            waits for something and must also give up when the prefetcher is stopped.
    """

    def __init__(
        self,
        source: Iterator[T],
        *,
        depth: int = 4,
        name: str = "odfweb3-prefetch",
        stop: threading.Event | None = None,
    ):
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self._items: queue.Queue[T | _End | BaseException] = queue.Queue(maxsize=depth)
        self._stop = stop if stop is not None else threading.Event()
        self._done = False
        self._thread = threading.Thread(
            target=_produce, args=(source, self._items, self._stop), name=name, daemon=True
        )
        self._thread.start()

    def __repr__(self) -> str:
        return f"Prefetcher(done={self._done}, alive={self._thread.is_alive()})"

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        item = self._items.get()
        if isinstance(item, _End):
            self._done = True
            self._thread.join()
            raise StopIteration
        if isinstance(item, BaseException):
            self._done = True
            self._thread.join()
            raise item
        return item

    def stop(self) -> None:
        """Stop the helper thread and wait for it (safe to call more than once).

        Afterwards nothing touches the source's underlying stream any more, so the
        caller may close it.
        """
        self._done = True
        self._stop.set()
        while self._thread.is_alive():
            try:  # unblock a put that is waiting for room
                while True:
                    self._items.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(_POLL_SECONDS)

    def __del__(self) -> None:
        # Dropped unfinished: let the helper thread end (it polls the event).
        stop = getattr(self, "_stop", None)  # absent if __init__ raised
        if stop is not None:
            stop.set()
