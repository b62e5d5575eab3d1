"""The ODF ``Timestamp`` struct as a value class, lossless to the nanosecond.

The FlatBuffers schema stores time as ``struct Timestamp { year: int32; ordinal: uint16;
seconds_from_midnight: uint32; nanoseconds: uint32; }`` (UTC). ``ordinal`` is the 1-based day of
the year, as in chrono's ``Datelike::ordinal`` used by the reference implementation. Python's
``datetime`` only keeps microseconds, so this class is the model's type and converts to and from
``datetime`` and RFC 3339 text.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from dataclasses import dataclass

__all__ = ["Timestamp"]

_NS_PER_S = 1_000_000_000
_RFC3339 = re.compile(
    r"^(-?\d{4,})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


@dataclass(frozen=True, slots=True, order=True)
class Timestamp:
    """A UTC instant with nanosecond precision, laid out like the ODF FlatBuffers struct.

    Field order makes the generated ordering chronological.

    Attributes:
        year: proleptic Gregorian year.
        ordinal: day of the year, 1-based (1..365, or 366 in leap years).
        seconds_from_midnight: 0..86399.
        nanoseconds: 0..999_999_999.
    """

    year: int
    ordinal: int
    seconds_from_midnight: int
    nanoseconds: int

    def __post_init__(self) -> None:
        days = 366 if calendar.isleap(self.year) else 365
        if not 1 <= self.ordinal <= days:
            raise ValueError(f"timestamp ordinal {self.ordinal} is not a day of {self.year}")
        if not 0 <= self.seconds_from_midnight < 86_400:
            raise ValueError(f"timestamp seconds_from_midnight {self.seconds_from_midnight}")
        if not 0 <= self.nanoseconds < _NS_PER_S:
            raise ValueError(f"timestamp nanoseconds {self.nanoseconds} out of range")

    @classmethod
    def from_datetime(cls, dt: _dt.datetime) -> Timestamp:
        """Convert a ``datetime``; naive values are taken as UTC, aware ones converted to UTC."""
        if dt.tzinfo is not None:
            dt = dt.astimezone(_dt.UTC)
        ordinal = dt.timetuple().tm_yday
        seconds = dt.hour * 3600 + dt.minute * 60 + dt.second
        return cls(dt.year, ordinal, seconds, dt.microsecond * 1000)

    def to_datetime(self) -> _dt.datetime:
        """Return an aware UTC ``datetime`` (sub-microsecond digits are truncated).

        Raises:
            ValueError: the year is outside ``datetime``'s range 1..9999.
        """
        day = _dt.datetime(self.year, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(days=self.ordinal - 1)
        return day + _dt.timedelta(
            seconds=self.seconds_from_midnight, microseconds=self.nanoseconds // 1000
        )

    @classmethod
    def parse(cls, text: str) -> Timestamp:
        """Parse RFC 3339 text (``Z`` or a numeric offset; up to 9 fraction digits).

        Raises:
            ValueError: the text is not an RFC 3339 date-time.
        """
        mt = _RFC3339.match(text.strip())
        if not mt:
            raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
        year, month, day, hh, mm, ss = (int(mt.group(i)) for i in range(1, 7))
        frac = mt.group(7) or ""
        nanos = int(frac.ljust(9, "0")) if frac else 0
        if hh > 23 or mm > 59 or ss > 59:
            raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
        try:
            date = _dt.date(year, month, day)
        except ValueError:
            raise ValueError(f"not an RFC 3339 timestamp: {text!r}") from None
        seconds = hh * 3600 + mm * 60 + ss
        if mt.group(9):
            offset = (int(mt.group(10)) * 60 + int(mt.group(11))) * 60
            seconds -= offset if mt.group(9) == "+" else -offset
        # Normalise the offset into the day (may move the date by one day either way).
        day_shift, seconds = divmod(seconds, 86_400)
        date = date + _dt.timedelta(days=day_shift)
        return cls(date.year, date.timetuple().tm_yday, seconds, nanos)

    def isoformat(self) -> str:
        """RFC 3339 in UTC with ``Z``; fraction digits in groups of 3 as needed (lossless)."""
        date = _dt.date(self.year, 1, 1) + _dt.timedelta(days=self.ordinal - 1)
        hh, rem = divmod(self.seconds_from_midnight, 3600)
        mm, ss = divmod(rem, 60)
        ns = self.nanoseconds
        if ns == 0:
            frac = ""
        elif ns % 1_000_000 == 0:
            frac = f".{ns // 1_000_000:03d}"
        elif ns % 1000 == 0:
            frac = f".{ns // 1000:06d}"
        else:
            frac = f".{ns:09d}"
        return f"{date.isoformat()}T{hh:02d}:{mm:02d}:{ss:02d}{frac}Z"

    def __str__(self) -> str:
        return self.isoformat()
