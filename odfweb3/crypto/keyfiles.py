"""Private key files: X25519 identities and per-dataset content keys (docs/design.md, "Encryption").

Under the keystore directory (``config.keystore_dir``, shared with
:class:`odfweb3.crypto.keystore.Keystore`, whose ``*.key`` files are not touched)::

    identities/<name>.x25519            PKCS#8 PEM X25519 private key
    content/<quoted dataset ID>.json    content keys by epoch, passphrase key-encryption
                                        keys, and the dataset's current key envelope

Same rules as the Ed25519 keystore: directories 0700, files 0600 created through a
temporary ``O_CREAT | O_EXCL`` file, fsynced, then linked into place (identities are
never replaced) or renamed over the old file (content keys change on rotation); a
file or directory readable by group or others is refused. No ``repr`` or error
message here contains key bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from odfweb3.atomic_file import write_secret_atomic
from odfweb3.crypto.envelope import Envelope, decode_envelope, encode_envelope, new_envelope
from odfweb3.crypto.keys import ContentKey, KeyRing
from odfweb3.errors import ConflictError, CryptoError, FormatError, NotFound, UsageError
from odfweb3.foreign_json import load_foreign_json

__all__ = [
    "ContentKeyStore",
    "DatasetKeys",
    "IdentityStore",
    "decode_keyring",
    "encode_keyring",
    "new_dataset_keys",
    "read_private",
    "write_private",
]

_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_KEYS_FORMAT: Final = "odfweb3-content-keys"


def _check_private(path: Path, mode: int) -> None:
    if os.name == "posix" and stat.S_IMODE(mode) & 0o077:
        raise CryptoError(f"{path} is accessible by group or others; run `chmod go-rwx {path}`")


def _ensure_dir(path: Path) -> None:
    if not path.exists():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask
    _check_private(path, os.stat(path).st_mode)


def write_private(
    path: Path,
    data: bytes,
    *,
    replace: bool = False,
    private_root: Path | None = None,
    private_dir: bool = True,
) -> None:
    """Write a secret file with mode 0600, atomically (its directory is made 0700).

    Args:
        path: the file.
        data: its bytes.
        replace: replace an existing file (else refuse to).
        private_root: an ancestor of ``path`` (the keystore) to create 0700 as well.
        private_dir: require (and create) the file's directory with mode 0700; false
            for a file the user puts in a directory of their own (an export).

    Raises:
        ConflictError: the file exists and ``replace`` is false.
    """
    if private_root is not None:
        _ensure_dir(private_root)
    if private_dir:
        _ensure_dir(path.parent)
    write_secret_atomic(path, data, replace=replace)
    if os.name == "posix" and private_dir:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def read_private(path: Path, what: str) -> bytes:
    """Read a secret file, refusing one (or a directory) open to group or others.

    Raises:
        NotFound: no such file.
        CryptoError: permissions too open, or a symlink.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as exc:
        raise NotFound(f"no {what} at {path}") from exc
    except OSError as exc:
        raise CryptoError(f"cannot open {what} file {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        _check_private(path, os.fstat(handle.fileno()).st_mode)
        _check_private(path.parent, os.stat(path.parent).st_mode)
        return handle.read(1 << 20)


class IdentityStore:
    """Named X25519 identities (the private halves that open key envelopes)."""

    def __init__(self, keystore_dir: Path) -> None:
        self.keystore = Path(keystore_dir)
        self.root = self.keystore / "identities"

    def __repr__(self) -> str:
        return f"IdentityStore({str(self.root)!r})"

    def path_for(self, name: str) -> Path:
        """The file of identity ``name``."""
        if not _NAME.match(name):
            raise UsageError(f"identity name {name[:40]!r}: use 1-64 of A-Z a-z 0-9 . _ -")
        return self.root / f"{name}.x25519"

    def create(self, name: str) -> X25519PrivateKey:
        """Generate and store a new identity.

        Raises:
            ConflictError: ``name`` exists (identities are never replaced).
        """
        key = X25519PrivateKey.generate()
        pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        write_private(self.path_for(name), pem, private_root=self.keystore)
        return key

    def load(self, name: str) -> X25519PrivateKey:
        """Load identity ``name``."""
        data = read_private(self.path_for(name), f"identity {name!r}")
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise FormatError(f"{self.path_for(name)}: not a PEM private key") from exc
        if not isinstance(key, X25519PrivateKey):
            raise FormatError(f"{self.path_for(name)}: not an X25519 private key")
        return key

    def public_key(self, name: str) -> bytes:
        """The raw 32-byte public key of identity ``name``."""
        return self.load(name).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def list(self) -> list[str]:
        """Names of all identities, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name[: -len(".x25519")]
            for p in self.root.iterdir()
            if p.name.endswith(".x25519") and not p.name.startswith(".")
        )


@dataclass(frozen=True)
class DatasetKeys:
    """What the key holder keeps for one dataset.

    Attributes:
        ring: the content keys by epoch.
        envelope: the current key envelope (public; published beside the dataset).
        keks: passphrase recipients' key-encryption keys by recipient ID (secret).
    """

    ring: KeyRing
    envelope: Envelope
    keks: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"DatasetKeys({self.ring!r}, {self.envelope!r})"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise FormatError(f"content key file: {what} must be base64url text")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"content key file: {what} is not base64url") from exc


def encode_keyring(keys: DatasetKeys) -> bytes:
    """The secret file form (JSON). Write it only with :func:`write_private`."""
    doc: dict[str, Any] = {
        "format": _KEYS_FORMAT,
        "version": 1,
        "datasetId": keys.ring.dataset_id,
        "current": keys.ring.current,
        "keys": {str(k.epoch): _b64(k.secret) for k in keys.ring},
        "keks": {rid: _b64(kek) for rid, kek in sorted(keys.keks.items())},
        "envelope": json.loads(encode_envelope(keys.envelope)),
    }
    return (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()


def decode_keyring(data: bytes) -> DatasetKeys:
    """Parse :func:`encode_keyring`'s form.

    Raises:
        FormatError: not a content key file.
    """
    doc = load_foreign_json(data, what="content key file", max_bytes=max(len(data), 1))
    if not isinstance(doc, dict) or doc.get("format") != _KEYS_FORMAT or doc.get("version") != 1:
        raise FormatError("content key file: not an odfweb3 content key file (version 1)")
    did = doc.get("datasetId")
    current = doc.get("current")
    if not isinstance(did, str) or not isinstance(current, int):
        raise FormatError("content key file: datasetId and current are required")
    try:
        keys = {
            int(e): ContentKey(did, int(e), _unb64(s, f"key of epoch {e}"))
            for e, s in dict(doc.get("keys", {})).items()
        }
    except (ValueError, UsageError) as exc:
        raise FormatError("content key file: a key entry is malformed") from exc
    keks = {str(k): _unb64(v, "key-encryption key") for k, v in dict(doc.get("keks", {})).items()}
    envelope = decode_envelope(json.dumps(doc.get("envelope")).encode())
    if envelope.dataset_id != did:
        raise FormatError("content key file: envelope is for another dataset")
    return DatasetKeys(KeyRing(did, keys, current), envelope, keks)


def new_dataset_keys(dataset_id: str) -> DatasetKeys:
    """Epoch 1 of a new content key and an envelope with no recipients (in memory)."""
    ring = KeyRing.new(dataset_id)
    return DatasetKeys(ring, new_envelope(ring))


class ContentKeyStore:
    """Per-dataset content keys, passphrase key-encryption keys and envelope."""

    def __init__(self, keystore_dir: Path) -> None:
        self.keystore = Path(keystore_dir)
        self.root = self.keystore / "content"

    def __repr__(self) -> str:
        return f"ContentKeyStore({str(self.root)!r})"

    def path_for(self, dataset_id: str) -> Path:
        """The file of ``dataset_id``'s keys."""
        if not dataset_id or len(dataset_id) > 200 or not dataset_id.isprintable():
            raise UsageError(f"dataset ID {dataset_id[:40]!r}: 1-200 printable characters")
        return self.root / (quote(dataset_id, safe="") + ".json")

    def has(self, dataset_id: str) -> bool:
        """Whether keys for ``dataset_id`` exist."""
        return self.path_for(dataset_id).is_file()

    def load(self, dataset_id: str) -> DatasetKeys:
        """Load the keys of ``dataset_id``."""
        path = self.path_for(dataset_id)
        keys = decode_keyring(read_private(path, f"content keys of {dataset_id}"))
        if keys.ring.dataset_id != dataset_id:
            raise FormatError(f"{path}: holds keys of another dataset")
        return keys

    def load_or_create(self, dataset_id: str) -> DatasetKeys:
        """Load the keys, creating epoch 1 (and an envelope with no recipients) if none."""
        try:
            return self.load(dataset_id)
        except NotFound:
            pass
        keys = new_dataset_keys(dataset_id)
        try:
            self.create(keys)
        except ConflictError:  # created meanwhile by another process
            return self.load(dataset_id)
        return keys

    def create(self, keys: DatasetKeys) -> Path:
        """Store new keys; never replaces existing ones.

        Raises:
            ConflictError: keys of that dataset exist already (made meanwhile elsewhere).
        """
        path = self.path_for(keys.ring.dataset_id)
        write_private(path, encode_keyring(keys), private_root=self.keystore)
        return path

    def save(self, keys: DatasetKeys) -> Path:
        """Replace the stored keys of ``keys.ring.dataset_id`` (atomic rename)."""
        path = self.path_for(keys.ring.dataset_id)
        write_private(path, encode_keyring(keys), replace=True, private_root=self.keystore)
        return path

    def list(self) -> list[str]:
        """Dataset IDs with stored content keys, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            unquote(p.name[: -len(".json")])
            for p in self.root.iterdir()
            if p.name.endswith(".json") and not p.name.startswith(".")
        )
