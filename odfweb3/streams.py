"""The one verified-stream type: a stream over one object that checks itself at its end.

Every object a target sends is read through one (:func:`odfweb3.publish.source.open_verified`
makes them): the bytes are hashed as they pass, and :meth:`VerifiedStream.finish` raises
unless everything was read and matched the size and hash its block records. A wrapper (an
encrypting stream, a second read checked by another digest) is a verified stream too: its
``finish`` passes the check on. Nothing may become visible before ``finish`` returned.

:class:`VerifiedStreamBase` is what they share as a ``with`` statement: ``close`` always,
and with ``finish_on_exit`` the check when the block ends without an error.
"""

from __future__ import annotations

from types import TracebackType
from typing import ClassVar, Protocol, Self, runtime_checkable

__all__ = ["DeferrableStream", "VerifiedStream", "VerifiedStreamBase"]


@runtime_checkable
class VerifiedStream(Protocol):
    """A stream over one object that checks its hash and size at the end."""

    def read(self, n: int = -1, /) -> bytes:
        """Up to ``n`` bytes (all that is left when negative; short only at the end)."""
        ...

    def finish(self) -> None:
        """Raise unless everything was read and matched the recorded size and hash."""
        ...

    def close(self) -> None:
        """Close what it reads."""
        ...


@runtime_checkable
class DeferrableStream(VerifiedStream, Protocol):
    """A plaintext verified stream whose hashing can move to another thread and whose end
    can be checked on its own: what a target asks of a stream before it hashes on a worker
    or checks a second read by another digest (an encrypted stream is not one).

    After :meth:`defer_hashing`, reads only count bytes; every chunk read is handed to
    :meth:`absorb` in order; :meth:`end` checks nothing follows the last read.
    """

    where: str

    def defer_hashing(self) -> object: ...

    def absorb(self, chunk: bytes, /) -> None: ...

    def end(self) -> None: ...


class VerifiedStreamBase:
    """The ``with`` behaviour of a verified stream: ``close`` when the block ends, and
    first, when ``finish_on_exit`` and the block raised nothing, :meth:`finish` (a
    wrapper that re-reads an object checks it before its ``with`` block is left).
    Subclasses give ``read``, ``finish`` and ``close``."""

    finish_on_exit: ClassVar[bool] = False

    def finish(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.finish_on_exit and exc is None:
                self.finish()
        finally:
            self.close()
