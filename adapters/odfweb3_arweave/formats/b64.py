"""Base64url without padding, the text encoding Arweave uses for every binary field.

Arweave (transactions, wallets, data item ids) writes RFC 4648 section 5 base64url with the
``=`` padding stripped. Decoding here is strict about the alphabet, so a value that is
not base64url (for example standard base64 with ``+`` or ``/``) is a
:class:`~odfweb3.errors.FormatError`, not silently different bytes.
"""

from __future__ import annotations

import base64
import binascii
import re

from odfweb3.errors import FormatError

__all__ = ["b64url_decode", "b64url_encode"]

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    """Encode bytes as unpadded base64url text.

    Args:
        data: the bytes to encode.

    Returns:
        The base64url text without ``=`` padding.
    """
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, what: str = "value") -> bytes:
    """Decode unpadded (or padded) base64url text.

    Args:
        text: the base64url text.
        what: what is being decoded, for the error message (e.g. ``"tx owner"``).

    Returns:
        The decoded bytes.

    Raises:
        FormatError: the text is not base64url.
    """
    if not isinstance(text, str):
        raise FormatError(f"{what}: expected base64url text, got {type(text).__name__}")
    stripped = text.rstrip("=")
    if not _ALPHABET.fullmatch(stripped) or len(stripped) % 4 == 1:
        raise FormatError(f"{what}: not valid base64url text (length {len(text)})")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"{what}: not valid base64url text (length {len(text)})") from exc
