"""Arweave JWK wallets: load, generate, save, sign and verify (RSA-4096, RSA-PSS/SHA-256).

An Arweave wallet is an RSA private key written as a JSON Web Key (RFC 7517/7518 fields
``kty``, ``n``, ``e``, ``d``, ``p``, ``q``, ``dp``, ``dq``, ``qi``, base64url). Its *owner*
is the modulus ``n`` (512 bytes for RSA-4096) and its *address* is
``base64url(SHA-256(n))``.

Signatures are RSA-PSS with SHA-256 and MGF1-SHA-256. We sign with a 32-byte salt, as the
arweave-js WebCrypto driver does; verification accepts any salt length (arweave-js under
Node signs with the maximum salt length, and the arweave-js fixtures use 0).

Key material never appears in reprs, logs or error messages. Errors loading a wallet are
:class:`~odfweb3.errors.ConfigError` (the wallet file is user configuration); a failure
to sign is :class:`~odfweb3.errors.CryptoError`; a signature that does not verify is
:class:`~odfweb3.errors.SignatureError`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from odfweb3.atomic_file import write_secret_atomic
from odfweb3.errors import (
    ConfigError,
    ConflictError,
    CryptoError,
    FormatError,
    LocalIOError,
    SignatureError,
    UsageError,
)
from odfweb3.foreign_json import load_foreign_json
from odfweb3_arweave.formats.b64 import b64url_decode, b64url_encode

__all__ = [
    "KEY_BITS",
    "OWNER_LENGTH",
    "PUBLIC_EXPONENT",
    "SALT_LENGTH",
    "Wallet",
    "generate_wallet",
    "load_wallet",
    "owner_to_address",
    "save_wallet",
    "verify_signature",
    "wallet_from_jwk",
]

_MAX_WALLET_BYTES = 1 << 20  # a JWK is about 3 KiB

KEY_BITS = 4096
OWNER_LENGTH = KEY_BITS // 8
PUBLIC_EXPONENT = 65537
SALT_LENGTH = 32

_REQUIRED = ("n", "e", "d", "p", "q")


def owner_to_address(owner: bytes) -> str:
    """Return the wallet address for an owner (public modulus bytes).

    Args:
        owner: the RSA modulus, big-endian bytes.

    Returns:
        ``base64url(SHA-256(owner))``.
    """
    return b64url_encode(hashlib.sha256(owner).digest())


@dataclass(frozen=True)
class Wallet:
    """An Arweave RSA-4096 wallet. The private key stays out of ``repr``.

    Attributes:
        owner: the public modulus ``n`` (512 bytes).
        address: ``base64url(SHA-256(owner))``.
    """

    owner: bytes = field(repr=False)
    address: str
    _key: rsa.RSAPrivateKey = field(repr=False, compare=False)

    @property
    def owner_b64(self) -> str:
        """The owner as base64url text (the ``owner`` field of a transaction)."""
        return b64url_encode(self.owner)

    def sign(self, message: bytes, salt_length: int = SALT_LENGTH) -> bytes:
        """Sign a message with RSA-PSS/SHA-256.

        Args:
            message: the bytes to sign (for Arweave, a deep hash).
            salt_length: PSS salt length; 32 as arweave-js in browsers. Signatures are
                randomized unless this is 0.

        Returns:
            The 512-byte signature.

        Raises:
            CryptoError: signing failed.
        """
        try:
            return self._key.sign(
                message,
                padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=salt_length),
                hashes.SHA256(),
            )
        except (ValueError, TypeError) as exc:
            raise CryptoError(f"signing with wallet {self.address} failed: {exc}") from exc

    def to_jwk(self) -> dict[str, str]:
        """Return the private JWK (the wallet file's content). Handle with care."""
        priv = self._key.private_numbers()
        pub = priv.public_numbers

        def enc(value: int) -> str:
            return b64url_encode(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        return {
            "kty": "RSA",
            "n": b64url_encode(self.owner),
            "e": enc(pub.e),
            "d": enc(priv.d),
            "p": enc(priv.p),
            "q": enc(priv.q),
            "dp": enc(priv.dmp1),
            "dq": enc(priv.dmq1),
            "qi": enc(priv.iqmp),
        }


def _wallet_from_key(key: rsa.RSAPrivateKey) -> Wallet:
    n = key.public_key().public_numbers().n
    owner = n.to_bytes(OWNER_LENGTH, "big")
    return Wallet(owner=owner, address=owner_to_address(owner), _key=key)


def wallet_from_jwk(jwk: Any, where: str = "wallet") -> Wallet:
    """Build a wallet from a parsed JWK object.

    Args:
        jwk: the parsed JSON (a dict with RSA private JWK fields).
        where: where the JWK came from, for error messages (a path).

    Returns:
        The :class:`Wallet`.

    Raises:
        ConfigError: not a JWK, not RSA, not a private key, not RSA-4096 with e = 65537,
            or inconsistent fields. The message never contains key material.
    """
    hint = "use an Arweave RSA-4096 JWK wallet file"
    if not isinstance(jwk, dict):
        raise ConfigError(f"{where}: not a JWK (expected a JSON object); {hint}")
    if "kty" not in jwk:
        raise ConfigError(f"{where}: not a JWK (no 'kty' field); {hint}")
    if jwk["kty"] != "RSA":
        kty = jwk["kty"] if isinstance(jwk["kty"], str) and len(jwk["kty"]) < 16 else "?"
        raise ConfigError(f"{where}: JWK key type is {kty!r}, not 'RSA'; {hint}")
    missing = [name for name in _REQUIRED if not isinstance(jwk.get(name), str)]
    if missing:
        raise ConfigError(
            f"{where}: RSA JWK lacks private key field(s) {', '.join(missing)}; {hint}"
        )
    try:
        ints = {name: int.from_bytes(b64url_decode(jwk[name], name), "big") for name in _REQUIRED}
    except FormatError:
        raise ConfigError(f"{where}: RSA JWK has a field that is not base64url; {hint}") from None
    bits = ints["n"].bit_length()
    if bits != KEY_BITS:
        raise ConfigError(f"{where}: RSA key is {bits} bits; Arweave wallets are {KEY_BITS}-bit")
    if ints["e"] != PUBLIC_EXPONENT:
        raise ConfigError(f"{where}: RSA public exponent is not 65537 (AQAB); {hint}")
    p, q, d = ints["p"], ints["q"], ints["d"]
    try:
        numbers = rsa.RSAPrivateNumbers(
            p=p,
            q=q,
            d=d,
            dmp1=rsa.rsa_crt_dmp1(d, p),
            dmq1=rsa.rsa_crt_dmq1(d, q),
            iqmp=rsa.rsa_crt_iqmp(p, q),
            public_numbers=rsa.RSAPublicNumbers(ints["e"], ints["n"]),
        )
        key = numbers.private_key()
    except (ValueError, ZeroDivisionError):
        # Deliberately no detail from the exception: it could describe key values.
        raise ConfigError(f"{where}: RSA JWK fields do not form a valid key; {hint}") from None
    return _wallet_from_key(key)


def load_wallet(path: str | os.PathLike[str]) -> Wallet:
    """Load a JWK wallet file.

    Args:
        path: the wallet file (JSON).

    Returns:
        The :class:`Wallet`.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or is not a usable wallet.
    """
    where = f"wallet file {os.fspath(path)}"
    try:
        with open(path, "rb") as f:  # a symlinked secret is fine; a JWK is a few KiB
            raw = f.read(_MAX_WALLET_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{where}: cannot read it ({reason}); check --wallet") from None
    try:
        jwk = load_foreign_json(raw, what=where, max_bytes=_MAX_WALLET_BYTES)
    except FormatError:
        # Not the loader's message: a JSON error may quote the document (key material).
        raise ConfigError(f"{where}: not JSON; expected an Arweave JWK wallet") from None
    return wallet_from_jwk(jwk, where)


def generate_wallet() -> Wallet:
    """Generate a new RSA-4096 wallet (takes a second or more).

    Returns:
        The new :class:`Wallet`.
    """
    key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=KEY_BITS)
    return _wallet_from_key(key)


def save_wallet(wallet: Wallet, path: str | os.PathLike[str], overwrite: bool = False) -> None:
    """Write a wallet as a JWK file with mode 0600, atomically (temp file + rename).

    Args:
        wallet: the wallet to save.
        path: destination file.
        overwrite: replace an existing file (default: refuse).

    Raises:
        ConfigError: the file exists (and ``overwrite`` is false) or cannot be written.
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise ConfigError(f"wallet file {target} already exists; refusing to overwrite it")
    data = json.dumps(wallet.to_jwk()).encode("ascii")
    try:
        write_secret_atomic(target, data, replace=overwrite)
    except ConflictError:  # created by someone else since the check above
        raise ConfigError(
            f"wallet file {target} already exists; refusing to overwrite it"
        ) from None
    except (LocalIOError, UsageError) as exc:  # a full disk, a directory in its place
        raise ConfigError(f"wallet file {exc}") from None


def verify_signature(owner: bytes, message: bytes, signature: bytes, what: str = "") -> None:
    """Verify an RSA-PSS/SHA-256 signature by an Arweave owner (any salt length).

    Args:
        owner: the signer's public modulus bytes (exponent 65537, as arweave-js assumes).
        message: the signed bytes.
        signature: the signature.
        what: what was signed, for the error message (e.g. a transaction id).

    Raises:
        SignatureError: the signature does not verify or the owner is not a usable key.
    """
    place = f"{what}: " if what else ""
    try:
        public_key = rsa.RSAPublicNumbers(
            PUBLIC_EXPONENT, int.from_bytes(owner, "big")
        ).public_key()
        public_key.verify(
            signature,
            message,
            padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO),
            hashes.SHA256(),
        )
    except InvalidSignature:
        raise SignatureError(f"{place}signature does not verify against its owner") from None
    except ValueError:
        raise SignatureError(f"{place}owner is not a usable RSA public key") from None
