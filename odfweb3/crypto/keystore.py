"""A directory of Ed25519 keys per dataset (the IPNS/signing keys of that dataset).

Layout, where ``<label>`` is the dataset ID (``did:odf:…``) percent-encoded so any
label maps to one safe file name and back (``+`` and ``.json`` never occur in it)::

    <label>.key               the dataset's key: what a first publish to a target signs with
    <label>+<public hex>.key  another key of the dataset, imported for a target already
                              published under that key's name (a name never changes key)
    <label>.json              the entry's memory: per key (public key, hex), the highest
                              IPNS sequence signed with it (``highestSequence``)
    <label>.lock              taken (flock) while the memory is read and replaced

Each ``.key`` file holds exactly the libp2p ``PrivateKey`` protobuf (KeyType Ed25519 = 1,
Data = 32-byte seed + 32-byte public key) that ``ipfs key import`` reads, so an exported
key and a stored one are the same bytes. An IPNS name is its public key (the name is the
identity multihash of the key, ``odfweb3_ipfs.formats.libp2p_keys``), so "per name" here
is "per public key".

Files are created with mode 0600 and never overwritten: written to a temporary
file opened with ``O_CREAT | O_EXCL`` and mode 0600, fsynced, then linked into
place (``os.link`` fails if the key exists, so two writers cannot replace each
other's key), and the directory is fsynced. The directory is created with mode
0700. On POSIX, a key file or directory readable by group or others is refused
(like ssh does) rather than used.

Nothing here logs key bytes, and :class:`Keystore`'s ``repr`` shows only its path.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import stat
from collections.abc import Iterator
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

from odfweb3.atomic_file import write_file_atomic, write_secret_atomic
from odfweb3.errors import ConflictError, CryptoError, FormatError, NotFound, UsageError
from odfweb3.foreign_json import load_foreign_json

try:  # POSIX; elsewhere the memory is replaced without a lock (one publisher at a time)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["KEY_SUFFIX", "Keystore", "decode_entry", "encode_entry"]

KEY_SUFFIX: Final = ".key"
_HEADER: Final = b"\x08\x01\x12\x40"  # libp2p PrivateKey: Type=Ed25519 (1), Data: 64 bytes
_MAX_LABEL: Final = 200
_EXTRA: Final = "+"  # quote(..., safe="") escapes "+": it never occurs in a quoted label
_ENTRY_FORMAT: Final = "odfweb3-keystore-entry"
_MAX_ENTRY: Final = 1 << 20


def public_hex(key: Ed25519PrivateKey) -> str:
    """The raw 32-byte public key of ``key`` in lower-case hex (how the keystore names keys)."""
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def encode_entry(label: str, highest: dict[str, int]) -> bytes:
    """The ``<label>.json`` memory: ``highest`` maps a public key (hex) to the highest
    IPNS sequence signed with it."""
    doc = {
        "format": _ENTRY_FORMAT,
        "version": 1,
        "datasetId": label,
        "keys": {pub: {"highestSequence": seq} for pub, seq in sorted(highest.items())},
    }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def decode_entry(data: bytes, label: str, where: str) -> dict[str, int]:
    """Parse :func:`encode_entry`'s form (public key hex -> highest sequence signed).

    Raises:
        FormatError: not an entry of this keystore, or one of another label.
    """
    try:
        doc = load_foreign_json(data, what=where, max_bytes=_MAX_ENTRY)
    except FormatError as exc:
        raise FormatError(f"{exc}; move it away") from None
    if not isinstance(doc, dict) or doc.get("format") != _ENTRY_FORMAT or doc.get("version") != 1:
        raise FormatError(f"{where}: not an odfweb3 keystore entry (version 1); move it away")
    if doc.get("datasetId") != label:
        raise FormatError(f"{where}: holds the entry of another dataset; move it away")
    keys = doc.get("keys")
    out: dict[str, int] = {}
    if not isinstance(keys, dict):
        raise FormatError(f"{where}: keys must be a map; move it away")
    for pub, item in keys.items():
        seq = item.get("highestSequence") if isinstance(item, dict) else None
        if (
            not isinstance(pub, str)
            or len(pub) != 64
            or any(c not in "0123456789abcdef" for c in pub)
            or not isinstance(seq, int)
            or isinstance(seq, bool)
            or not 0 <= seq < 1 << 64
        ):
            raise FormatError(f"{where}: malformed key entry {str(pub)[:70]!r}; move it away")
        out[pub] = seq
    return out


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
            if p.name.endswith(KEY_SUFFIX) and not p.name.startswith(".") and _EXTRA not in p.name
        )

    def load(self, label: str) -> Ed25519PrivateKey:
        """Load the key for ``label``.

        Raises:
            NotFound: no key for that label.
            CryptoError: the file or directory is readable by group or others.
            FormatError: the file is not a libp2p Ed25519 private key.
        """
        return self._read(self.path_for(label), label)

    def _read(self, path: Path, label: str) -> Ed25519PrivateKey:
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
        return self._write(self.path_for(label), label, key)

    def _write(self, path: Path, label: str, key: Ed25519PrivateKey) -> Path:
        self._ensure_root()
        try:
            # 0600 from its creation, then a hard link that fails instead of replacing a key
            write_secret_atomic(path, _encode_key(key), replace=False)
        except ConflictError:
            raise ConflictError(
                f"a key for {label} already exists in {self.root}; it is never replaced"
            ) from None
        return path

    def _extra_path(self, label: str, pub: str) -> Path:
        base = self.path_for(label)
        return base.with_name(base.name[: -len(KEY_SUFFIX)] + _EXTRA + pub + KEY_SUFFIX)

    def keys_of(self, label: str) -> builtins.list[Ed25519PrivateKey]:
        """Every key held for ``label``: the dataset's key first, then the imported others."""
        out = [self.load(label)] if self.has(label) else []
        prefix = self.path_for(label).name[: -len(KEY_SUFFIX)] + _EXTRA
        if self.root.is_dir():
            for p in sorted(self.root.iterdir()):
                if p.name.startswith(prefix) and p.name.endswith(KEY_SUFFIX):
                    key = self._read(p, label)
                    if p.name != self._extra_path(label, public_hex(key)).name:
                        raise FormatError(f"{p}: holds another key than its name says")
                    out.append(key)
        return out

    def find(self, label: str, public_key: bytes) -> Ed25519PrivateKey | None:
        """The key of ``label`` whose raw public key is ``public_key``, or None."""
        pub = public_key.hex()
        if self.has(label):
            key = self.load(label)
            if public_hex(key) == pub:
                return key
        path = self._extra_path(label, pub)
        return self._read(path, label) if path.is_file() else None

    def labels_with(self, public_key: bytes) -> builtins.list[str]:
        """The labels holding the key whose raw public key is ``public_key``."""
        return [label for label in self.list_all() if self.find(label, public_key) is not None]

    def list_all(self) -> builtins.list[str]:
        """Every label with a key, the dataset's own or an imported other one, sorted."""
        if not self.root.is_dir():
            return []
        labels = set()
        for p in self.root.iterdir():
            if p.name.endswith(KEY_SUFFIX) and not p.name.startswith("."):
                labels.add(unquote(p.name[: -len(KEY_SUFFIX)].partition(_EXTRA)[0]))
        return sorted(labels)

    def add(self, label: str, key: Ed25519PrivateKey) -> tuple[Path, bool]:
        """Keep ``key`` for ``label`` (an import): as the dataset's key when it has none,
        else beside it. Returns the file and whether the key was new (the same key twice
        is kept once). No key is ever replaced."""
        pub = public_hex(key)
        if not self.has(label):
            with contextlib.suppress(ConflictError):  # unless stored meanwhile
                return self.store(label, key), True
        if public_hex(self.load(label)) == pub:
            return self.path_for(label), False
        path = self._extra_path(label, pub)
        if path.is_file():
            return path, False
        try:
            return self._write(path, label, key), True
        except ConflictError:  # the same key, stored meanwhile
            return path, False

    # -- the highest IPNS sequence signed, per key (name) -------------------------------

    def entry_path(self, label: str) -> Path:
        """The entry's memory file (``<label>.json``)."""
        base = self.path_for(label)
        return base.with_name(base.name[: -len(KEY_SUFFIX)] + ".json")

    def _highest_all(self, label: str) -> dict[str, int]:
        path = self.entry_path(label)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise CryptoError(f"cannot open keystore entry {path}: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_MAX_ENTRY + 1)
        return decode_entry(data, label, str(path))

    def highest_signed(self, label: str, public_key: bytes) -> int | None:
        """The highest IPNS sequence this keystore signed for ``label`` with the key whose
        raw public key is ``public_key`` (the name's), or None when it signed none.

        Raises:
            FormatError: the entry file is damaged (one line naming it).
        """
        return self._highest_all(label).get(public_key.hex())

    def note_signed(self, label: str, public_key: bytes, sequence: int) -> None:
        """Remember that a record with ``sequence`` was signed for ``label`` with that key;
        call it before the signed record leaves the process. The memory only grows (a lower
        sequence leaves it as it is); read and replaced under ``<label>.lock``."""
        if sequence < 0:
            raise UsageError(f"IPNS sequence {sequence}: must not be negative")
        self._ensure_root()
        pub = public_key.hex()
        with self._locked(label):
            highest = self._highest_all(label)
            if highest.get(pub, -1) >= sequence:
                return
            highest[pub] = sequence
            write_file_atomic(self.entry_path(label), encode_entry(label, highest), public=False)

    @contextlib.contextmanager
    def _locked(self, label: str) -> Iterator[None]:
        base = self.path_for(label)
        lock = base.with_name(base.name[: -len(KEY_SUFFIX)] + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # drops the flock

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

    @staticmethod
    def _check_private(mode: int, path: Path) -> None:
        if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
            raise CryptoError(f"{path} is accessible by group or others; run `chmod go-rwx {path}`")
