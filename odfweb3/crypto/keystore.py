"""A directory of Ed25519 keys, one per dataset (the IPNS/signing key of that dataset).

Layout: ``<root>/<label>.key``, where ``<label>`` is the dataset ID (``did:odf:…``)
percent-encoded so any label maps to one safe file name and back. Each file
holds exactly the libp2p ``PrivateKey`` protobuf (KeyType Ed25519 = 1, Data =
32-byte seed + 32-byte public key) that ``ipfs key import`` reads, so an
exported key and a stored one are the same bytes.

Files are created with mode 0600 and never overwritten: written to a temporary
file opened with ``O_CREAT | O_EXCL`` and mode 0600, fsynced, then linked into
place (``os.link`` fails if the key exists, so two writers cannot replace each
other's key), and the directory is fsynced. The directory is created with mode
0700. On POSIX, a key file or directory readable by group or others is refused
(like ssh does) rather than used.

Nothing here logs key bytes, and :class:`Keystore`'s ``repr`` shows only its path.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Final
from urllib.parse import quote, unquote

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from odfweb3.errors import ConflictError, CryptoError, FormatError, NotFound, UsageError

__all__ = ["KEY_SUFFIX", "Keystore"]

KEY_SUFFIX: Final = ".key"
_HEADER: Final = b"\x08\x01\x12\x40"  # libp2p PrivateKey: Type=Ed25519 (1), Data: 64 bytes
_MAX_LABEL: Final = 200


def _encode_key(key: Ed25519PrivateKey) -> bytes:
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return _HEADER + seed + public


def _decode_key(data: bytes, where: str) -> Ed25519PrivateKey:
    if len(data) != len(_HEADER) + 64 or not data.startswith(_HEADER):
        raise FormatError(f"{where}: not a libp2p Ed25519 private key file")
    key = Ed25519PrivateKey.from_private_bytes(data[4:36])
    if _encode_key(key) != data:
        raise FormatError(f"{where}: public half does not match the private key")
    return key


class Keystore:
    """One Ed25519 private key per dataset in a private directory.

    Args:
        root: the keystore directory (created with mode 0700 on first write).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"Keystore({str(self.root)!r})"

    def path_for(self, label: str) -> Path:
        """The file that holds (or would hold) the key for ``label`` (a dataset ID)."""
        if not label or len(label) > _MAX_LABEL or not label.isprintable():
            raise UsageError(
                f"keystore label {label[:40]!r}: use a dataset ID (1-{_MAX_LABEL} printable chars)"
            )
        return self.root / (quote(label, safe="") + KEY_SUFFIX)

    def has(self, label: str) -> bool:
        """Whether a key for ``label`` exists."""
        return self.path_for(label).is_file()

    def list(self) -> list[str]:
        """The labels of all stored keys, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            unquote(p.name[: -len(KEY_SUFFIX)])
            for p in self.root.iterdir()
            if p.name.endswith(KEY_SUFFIX) and not p.name.startswith(".")
        )

    def load(self, label: str) -> Ed25519PrivateKey:
        """Load the key for ``label``.

        Raises:
            NotFound: no key for that label.
            CryptoError: the file or directory is readable by group or others.
            FormatError: the file is not a libp2p Ed25519 private key.
        """
        path = self.path_for(label)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError as exc:
            raise NotFound(
                f"no key for {label} in {self.root}; generate or import one first"
            ) from exc
        except OSError as exc:  # e.g. ELOOP: a symlink where a key file should be
            raise CryptoError(f"cannot open key file {path}: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as handle:
            self._check_private(os.fstat(handle.fileno()).st_mode, path)
            self._check_private(os.stat(self.root).st_mode, self.root)
            data = handle.read(1024)
        return _decode_key(data, str(path))

    def generate(self, label: str) -> Ed25519PrivateKey:
        """Create, store and return a new key for ``label``.

        Raises:
            ConflictError: a key for ``label`` already exists (it is never replaced).
        """
        key = Ed25519PrivateKey.generate()
        self.store(label, key)
        return key

    def load_or_generate(self, label: str) -> Ed25519PrivateKey:
        """Load the key for ``label``, generating and storing one if there is none."""
        try:
            return self.load(label)
        except NotFound:
            pass
        try:
            return self.generate(label)
        except ConflictError:  # another process created it meanwhile
            return self.load(label)

    def store(self, label: str, key: Ed25519PrivateKey) -> Path:
        """Store an existing key (e.g. the dataset's own identity key) under ``label``.

        Raises:
            ConflictError: a key for ``label`` already exists (it is never replaced).
        """
        path = self.path_for(label)
        self._ensure_root()
        tmp = self.root / f".{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(_encode_key(key))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)  # atomic, and fails instead of replacing a key
            except FileExistsError as exc:
                raise ConflictError(
                    f"a key for {label} already exists in {self.root}; it is never replaced"
                ) from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._fsync_root()
        return path

    def export_libp2p(self, label: str) -> bytes:
        """The key as the libp2p ``PrivateKey`` protobuf ``ipfs key import`` reads.

        The bytes are secret: write them only to a file with mode 0600.
        """
        return _encode_key(self.load(label))

    def _ensure_root(self) -> None:
        if not self.root.exists():
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.root, 0o700)  # mkdir's mode is filtered by the umask
        self._check_private(os.stat(self.root).st_mode, self.root)

    def _fsync_root(self) -> None:
        if os.name != "posix":
            return
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _check_private(mode: int, path: Path) -> None:
        if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
            raise CryptoError(f"{path} is accessible by group or others; run `chmod go-rwx {path}`")
