"""The whole odfweb3 exception tree.

Every error odfweb3 raises on purpose is an :class:`OdfWeb3Error`; anything else
escaping the library is a bug. Adapters translate foreign exceptions (httpx,
node replies, ``cryptography``) once, at the edge, with ``raise ... from exc``.
The CLI turns an ``OdfWeb3Error`` into one line on stderr and the exit code
given by its ``exit_code`` attribute; one code per meaning, the same in every
command (``tests/unit/hostile/test_exit_codes.py`` checks this tree against the
classes, the CLI's table and docs/security.md)::

    OdfWeb3Error                         other odfweb3 error                  exit 2
    ├── UsageError                       bad arguments, unusable DEST         exit 64
    │   └── ConfigError                  odfweb3.yaml or ODFWEB3_* invalid    exit 78
    ├── FormatError (ValueError)         malformed block, CAR, record, JSON   exit 65
    ├── IntegrityError                   corrupt: not what its hash says      exit 65
    │   ├── HashMismatch(expected, actual)                                    exit 65
    │   ├── ChainBroken                  the metadata chain breaks a rule     exit 65
    │   └── ReplicaMismatch              a replica contradicts its record     exit 65
    ├── ValidationFailed                 a dataset failed validation          exit 1
    ├── NotFound                         object, ref, key or record missing   exit 66
    ├── ResolutionError                  a name did not resolve to a head     exit 2
    ├── ConflictError                    target head does not descend         exit 75
    ├── NotYetConfirmed                  sent, not confirmed by the deadline  exit 75
    ├── LocalIOError                     local disk: full, read-only, denied  exit 74
    ├── CryptoError                                                           exit 2
    │   ├── DecryptionError              wrong key, or ciphertext altered     exit 2
    │   ├── SignatureError               a forged or broken signature         exit 65
    │   └── SigningKeyMissing            a name's key is not in the keystore  exit 77
    └── BackendError                     raised by adapters only              exit 69
        ├── BackendUnavailable           cannot reach the node or gateway     exit 69
        └── BackendRejected(status, detail)                                   exit 69
            └── BackendAuthError         the service refused our token        exit 77

Not an exception: exit 70 is a bug (anything that is not an ``OdfWeb3Error``, reported
by the CLI in one line), 130 an interrupt. Corrupt data — bytes that do not parse, do
not match their hash, break the chain rules, or contradict their signed record — is
exit 65 in every command; :func:`is_corruption` tells it apart from a replica that is
merely unreachable, and ``verify`` reports it as the status ``corrupt``.

Messages are one line: what failed, where, and what to do. They never contain key
material.
"""

from __future__ import annotations

import re

__all__ = [
    "BackendAuthError",
    "BackendError",
    "BackendRejected",
    "BackendUnavailable",
    "ChainBroken",
    "ConfigError",
    "ConflictError",
    "CryptoError",
    "DecryptionError",
    "FormatError",
    "HashMismatch",
    "IntegrityError",
    "LocalIOError",
    "NotFound",
    "NotYetConfirmed",
    "OdfWeb3Error",
    "ReplicaMismatch",
    "ResolutionError",
    "SignatureError",
    "SigningKeyMissing",
    "UsageError",
    "ValidationFailed",
    "error_code",
    "is_corruption",
]


class OdfWeb3Error(Exception):
    """Base of every error odfweb3 raises on purpose."""

    exit_code: int = 2


class UsageError(OdfWeb3Error):
    """The command line or the configuration asks for something impossible."""

    exit_code = 64


class ConfigError(UsageError):
    """The configuration file or an ODFWEB3_* variable is invalid."""

    exit_code = 78


class FormatError(OdfWeb3Error, ValueError):
    """Bytes that do not parse as the format they claim to be."""

    exit_code = 65


class IntegrityError(OdfWeb3Error):
    """Bytes that parse but are not what their hash or chain says they are."""

    exit_code = 65


class HashMismatch(IntegrityError):
    """The hash of some bytes differs from the one expected.

    Args:
        expected: the hash that was expected (printable form).
        actual: the hash the bytes really have.
        where: what was being checked (a path, a CID, a URL).
    """

    def __init__(self, expected: str, actual: str, where: str = "") -> None:
        self.expected = expected
        self.actual = actual
        self.where = where
        place = f"{where}: " if where else ""
        super().__init__(f"{place}hash mismatch: expected {expected}, got {actual}")


class ChainBroken(IntegrityError):
    """The metadata chain breaks one of the spec's rules."""


class ValidationFailed(OdfWeb3Error):
    """A dataset failed validation; ``violations`` lists every problem found."""

    exit_code = 1

    def __init__(self, message: str, violations: list[object] | None = None) -> None:
        super().__init__(message)
        self.violations = violations or []


class NotFound(OdfWeb3Error):
    """An object, ref, key or record does not exist where it was looked for."""

    exit_code = 66


class ResolutionError(OdfWeb3Error):
    """A name (IPNS, did:odf, ar://) could not be resolved to a dataset head."""


class ConflictError(OdfWeb3Error):
    """The target holds a head this publish does not descend from, or lost a race."""

    exit_code = 75


class NotYetConfirmed(OdfWeb3Error):
    """An upload was sent and its receipt kept, but the service did not confirm it (an
    Arweave bundler's FINALIZED) within the configured deadline: try again later
    (EX_TEMPFAIL). Nothing is lost: state records it as sent, never as confirmed."""

    exit_code = 75


class CryptoError(OdfWeb3Error):
    """Encryption, decryption, key handling or signing failed."""


class DecryptionError(CryptoError):
    """Ciphertext failed authentication or the key is wrong."""


class SignatureError(CryptoError):
    """A signature does not verify against the key it claims (forged or corrupt data)."""

    exit_code = 65


class SigningKeyMissing(CryptoError):
    """The dataset is already published under a name whose key is not in this keystore.

    Exit 77 (sysexits EX_NOPERM): this machine may not sign for the name; retrying does not
    help, importing the key (``odfweb3 keys import``) does. Nothing was sent.
    """

    exit_code = 77


class ReplicaMismatch(IntegrityError):
    """A replica contradicts itself or its signed record (e.g. serves another head).

    Two replicas that merely differ are not an error: ``verify`` reports them as
    ``behind`` / ``ahead`` / ``diverged`` (exit 1).
    """


class LocalIOError(OdfWeb3Error):
    """A local file could not be written or read: disk full, read-only, permission denied."""

    exit_code = 74


class BackendError(OdfWeb3Error):
    """A node or gateway failed; raised by adapters only."""

    exit_code = 69


class BackendUnavailable(BackendError):
    """The node or gateway cannot be reached (connection refused, timeout)."""


class ReadRefused(BackendError):
    """A reference that was reached but is not read: nothing verifiable binds what it
    serves (an ``ar://`` path manifest with no signed upload record). ``verify`` reports it
    as ``refused``, not ``unreachable``: asking again does not help, another reference does."""


class BackendRejected(BackendError):
    """The node or gateway answered with an error.

    Args:
        status: HTTP status (0 when not HTTP).
        detail: the node's own message, shortened to one line.
    """

    def __init__(self, message: str, status: int = 0, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class BackendAuthError(BackendRejected):
    """A service refused our credentials (HTTP 401/403: a wrong or revoked token).

    Exit 77 (sysexits EX_NOPERM): retrying does not help, a new token does.
    """

    exit_code = 77


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` says the data itself is bad (exit 65, ``verify`` status ``corrupt``).

    Malformed bytes, a hash or chain-rule failure, a record contradicted by the content,
    a forged signature. Not: a missing object, an unreachable node, a wrong key.
    """
    return isinstance(exc, FormatError | IntegrityError | SignatureError)


def error_code(exc: OdfWeb3Error) -> str:
    """The error's kind as a stable word for machines (``--json``): the nearest class of this
    tree, in snake case without ``Error`` (``not_found``, ``hash_mismatch``, ``usage``;
    ``error`` for the base). An adapter's own subclass reports the class it refines."""
    for cls in type(exc).__mro__:
        if cls.__module__ == __name__:
            if cls is OdfWeb3Error:
                return "error"
            name = cls.__name__.removesuffix("Error")
            return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return "error"  # pragma: no cover - every OdfWeb3Error has the base in its MRO
