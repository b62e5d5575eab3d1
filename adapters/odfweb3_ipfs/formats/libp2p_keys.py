"""libp2p Ed25519 keys, peer IDs and IPNS names (libp2p peer-ids spec; IPNS spec "IPNS Name").

- Keys are wrapped in the libp2p protobuf ``PublicKey``/``PrivateKey`` messages
  (``Type = 1`` (field 1, KeyType Ed25519), ``Data`` (field 2)). A public key's
  ``Data`` is the raw 32-byte key; a private key's ``Data`` is the 32-byte seed
  followed by the 32-byte public key (64 bytes; the legacy 96-byte form repeats
  the public key and is accepted when both copies agree). The private-key
  protobuf is what ``ipfs key import`` reads by default.
- A peer ID is the *identity* multihash of the serialized public key when that
  is at most 42 bytes (always, for Ed25519), else its SHA2-256 multihash.
- An IPNS name is that multihash as a CIDv1 with codec ``libp2p-key`` (0x72),
  written in base36 (``k51…``). Names are parsed from any multibase CID form
  (base36, base32 ``b…``), from a bare base58btc peer ID (``12D3Koo…``,
  ``Qm…``), with or without a leading ``/ipns/``.

Private keys are ``cryptography`` ``Ed25519PrivateKey`` objects, which never
show their bytes in ``repr``; nothing here logs or prints key material.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from odfweb3.errors import FormatError
from odfweb3_ipfs.formats.pbwire import (
    WIRE_LEN,
    WIRE_VARINT,
    encode_bytes_field,
    encode_varint_field,
    iter_fields,
)

__all__ = [
    "IDENTITY",
    "KEY_TYPE_ED25519",
    "LIBP2P_KEY",
    "SHA2_256",
    "IpnsName",
    "ipns_name_for_public_key",
    "parse_ipns_name",
    "private_key_from_protobuf",
    "private_key_to_protobuf",
    "public_key_bytes",
    "public_key_from_protobuf",
    "public_key_to_protobuf",
]

if TYPE_CHECKING:
    from multiformats import CID

KEY_TYPE_ED25519: Final = 1
LIBP2P_KEY: Final = 0x72  # multicodec libp2p-key
IDENTITY: Final = 0x00  # multihash identity
_BASE36: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
SHA2_256: Final = 0x12
_MAX_INLINE_KEY: Final = 42  # peer-ids spec: inline keys up to 42 serialized bytes
_KEY_TYPE_NAMES: Final = {0: "RSA", 1: "Ed25519", 2: "Secp256k1", 3: "ECDSA"}


def public_key_bytes(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    """Return the raw 32-byte Ed25519 public key of a private or public key."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_key_to_protobuf(raw32: bytes) -> bytes:
    """Serialize a raw Ed25519 public key as a libp2p ``PublicKey`` protobuf."""
    if len(raw32) != 32:
        raise FormatError(f"Ed25519 public key: expected 32 bytes, got {len(raw32)}")
    return encode_varint_field(1, KEY_TYPE_ED25519) + encode_bytes_field(2, bytes(raw32))


def _parse_key_message(data: bytes, where: str) -> tuple[int, bytes]:
    key_type: int | None = None
    key_data: bytes | None = None
    for number, wire, value in iter_fields(data, where):
        if number == 1:
            if wire != WIRE_VARINT or not isinstance(value, int):
                raise FormatError(f"{where}: field Type has the wrong wire type")
            key_type = value
        elif number == 2:
            if wire != WIRE_LEN or not isinstance(value, bytes):
                raise FormatError(f"{where}: field Data has the wrong wire type")
            key_data = value
    if key_type is None or key_data is None:
        raise FormatError(f"{where}: required field Type or Data is missing")
    if key_type != KEY_TYPE_ED25519:
        name = _KEY_TYPE_NAMES.get(key_type, str(key_type))
        raise FormatError(f"{where}: key type {name} is not supported (only Ed25519)")
    return key_type, key_data


def public_key_from_protobuf(data: bytes) -> bytes:
    """Parse a libp2p ``PublicKey`` protobuf holding an Ed25519 key.

    Returns:
        The raw 32-byte public key.

    Raises:
        FormatError: malformed message, another key type, or wrong key length.
    """
    _type, key_data = _parse_key_message(bytes(data), "libp2p public key")
    if len(key_data) != 32:
        raise FormatError(f"libp2p public key: Ed25519 key has {len(key_data)} bytes, not 32")
    return key_data


def private_key_to_protobuf(key: Ed25519PrivateKey) -> bytes:
    """Serialize a private key as the libp2p ``PrivateKey`` protobuf (seed + public key).

    This is the ``libp2p-protobuf-cleartext`` form ``ipfs key import`` reads. The
    result is secret: write it only to a file with mode 0600.
    """
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return encode_varint_field(1, KEY_TYPE_ED25519) + encode_bytes_field(
        2, seed + public_key_bytes(key)
    )


def private_key_from_protobuf(data: bytes) -> Ed25519PrivateKey:
    """Parse a libp2p ``PrivateKey`` protobuf holding an Ed25519 key.

    Accepts the 64-byte (seed + public key) and legacy 96-byte (seed + public key
    twice) forms; the embedded public key must match the seed.

    Raises:
        FormatError: malformed message, another key type, or inconsistent key bytes.
    """
    _type, key_data = _parse_key_message(bytes(data), "libp2p private key")
    if len(key_data) == 96:
        if key_data[32:64] != key_data[64:96]:
            raise FormatError("libp2p private key: the two public key copies differ")
        key_data = key_data[:64]
    if len(key_data) != 64:
        raise FormatError(
            f"libp2p private key: Ed25519 data has {len(key_data)} bytes, expected 64 or 96"
        )
    key = Ed25519PrivateKey.from_private_bytes(key_data[:32])
    if public_key_bytes(key) != key_data[32:]:
        raise FormatError("libp2p private key: public key does not match the private seed")
    return key


@dataclass(frozen=True)
class IpnsName:
    """An IPNS name: the multihash of a libp2p public key (a peer ID).

    Attributes:
        multihash: the binary multihash (identity for Ed25519, sha2-256 for big keys).
    """

    multihash: bytes

    @property
    def cid(self) -> CID:
        """The name as a CIDv1 with codec libp2p-key."""
        from multiformats import CID

        return CID("base36", 1, LIBP2P_KEY, self.multihash)

    def __str__(self) -> str:
        """Canonical text form: base36 CIDv1 libp2p-key (``k51…``)."""
        # The binary CID ``0x01 0x72 <multihash>`` (both varints one byte) as a base36
        # number: it starts with 0x01, so no leading zero byte pads it. Written here, not
        # by multiformats, which a car: publish would import for this alone.
        value = int.from_bytes(b"\x01\x72" + self.multihash, "big")
        digits: list[str] = []
        while value:
            value, d = divmod(value, 36)
            digits.append(_BASE36[d])
        return "k" + "".join(reversed(digits))

    @property
    def peer_id(self) -> str:
        """Legacy text form: the bare multihash in base58btc (``12D3Koo…``)."""
        from multiformats import multibase

        return str(multibase.encode(self.multihash, "base58btc"))[1:]

    @property
    def routing_key(self) -> bytes:
        """The DHT/routing key: ``b"/ipns/"`` followed by the binary multihash."""
        return b"/ipns/" + self.multihash

    @classmethod
    def from_public_key(cls, raw32: bytes) -> IpnsName:
        """The name of a raw Ed25519 public key (identity multihash, key inlined)."""
        serialized = public_key_to_protobuf(raw32)
        if len(serialized) > _MAX_INLINE_KEY:  # never for Ed25519 (36 bytes)
            raise FormatError("public key too large to inline in an IPNS name")
        return cls(bytes([IDENTITY, len(serialized)]) + serialized)

    def inlined_public_key(self) -> bytes | None:
        """The raw Ed25519 key inlined in an identity multihash, or None if hashed."""
        code, digest = _split_multihash(self.multihash)
        if code != IDENTITY:
            return None
        return public_key_from_protobuf(digest)


def _split_multihash(mh: bytes) -> tuple[int, bytes]:
    # Both codes we accept are single-byte varints; so is any length up to 127.
    if len(mh) < 2 or mh[0] not in (IDENTITY, SHA2_256) or mh[1] > 0x7F:
        raise FormatError("IPNS name: multihash is not identity or sha2-256")
    code, length, digest = mh[0], mh[1], mh[2:]
    if len(digest) != length or (code == SHA2_256 and length != 32):
        raise FormatError("IPNS name: multihash length does not match its digest")
    return code, digest


def ipns_name_for_public_key(raw32: bytes) -> str:
    """Return the IPNS name (``k51…``) of a raw Ed25519 public key.

    With a dataset's own identity key this makes the IPNS name follow from the
    dataset ID. :meth:`IpnsName.from_public_key` gives the structured form.
    """
    return str(IpnsName.from_public_key(raw32))


def parse_ipns_name(text: str) -> IpnsName:
    """Parse an IPNS name from its base36/base32 CID or base58btc peer-ID text.

    Args:
        text: ``k51…``, ``bafzaa…``, ``12D3Koo…``/``Qm…``, optionally prefixed ``/ipns/``.

    Raises:
        FormatError: not a libp2p-key CID or a peer ID with an identity/sha2-256 multihash.
    """
    name = text.strip()
    if name.startswith("/ipns/"):
        name = name[len("/ipns/") :]
    if not name:
        raise FormatError("IPNS name is empty")
    shown = name[:80]
    from multiformats import CID, multibase  # local: slow to import, used to read names

    if name.startswith(("1", "Qm")):
        # A bare base58btc multihash (legacy peer-ID form): identity "1…", sha2-256 "Qm…".
        try:
            mh = bytes(multibase.decode("z" + name))
        except Exception as exc:  # multiformats raises several unrelated types
            raise FormatError(f"IPNS name {shown!r}: invalid base58btc peer ID") from exc
    else:
        try:
            cid = CID.decode(name)
        except Exception as exc:  # multiformats raises several unrelated types
            raise FormatError(f"IPNS name {shown!r}: not a CID or peer ID") from exc
        if cid.version != 1 or cid.codec.code != LIBP2P_KEY:
            raise FormatError(f"IPNS name {shown!r}: CID codec is not libp2p-key (0x72)")
        mh = bytes(cid.digest)
    _split_multihash(mh)
    return IpnsName(mh)
