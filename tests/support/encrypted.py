"""An encrypted-publish test world: a dataset full of marker strings, its keys, a recipient.

Used by the encryption tests of every target: the markers make any plaintext
leak easy to spot in whatever was written or sent.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from odfweb3.crypto.envelope import add_recipient, encode_envelope, x25519_recipient
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys, IdentityStore
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.sealer import Sealer
from odfweb3.odf import builder

DATA_MARKER = b"SECRET-ROW-a41d77"
INFO_MARKER = "SECRET-DESCRIPTION-e9b3f1"


class _MarkerRandom(random.Random):
    """Example data made of marker strings, every file different."""

    calls = 0

    def randbytes(self, n: int) -> bytes:
        _MarkerRandom.calls += 1
        unit = DATA_MARKER + b"-%d;" % _MarkerRandom.calls
        return (unit * (n // len(unit) + 1))[:n]


@dataclass
class EncryptedWorld:
    ds: Path
    built: builder.BuiltDataset
    did: str
    sealer: Sealer
    alice: X25519PrivateKey
    ring: KeyRing
    keys_dir: Path

    def forbidden(self) -> list[bytes]:
        """Markers, key bytes in common encodings, and a slice of every plaintext object."""
        secret = self.ring.current_key().secret
        out = [
            DATA_MARKER,
            INFO_MARKER.encode(),
            secret,
            secret.hex().encode(),
            base64.urlsafe_b64encode(secret).rstrip(b"="),
            base64.b64encode(secret).rstrip(b"="),
        ]
        for p in self.ds.rglob("*"):
            if p.is_file() and p.parent.name in ("blocks", "data", "checkpoints"):
                data = p.read_bytes()
                out.append(data[len(data) // 2 : len(data) // 2 + 24])
        return out

    def assert_no_leak(self, data: bytes, where: str) -> None:
        for needle in self.forbidden():
            assert needle not in data, f"{needle[:20]!r} leaked into {where}"


def make_encrypted_world(
    tmp_path: Path, monkeypatch, *, blocks: int = 3, data_bytes: int = 300_000, seed: int = 5
) -> EncryptedWorld:
    """Build the marker dataset, its content key (epoch 1) and recipient ``alice``."""
    monkeypatch.setattr(builder.random, "Random", _MarkerRandom)
    built = builder.create_root_dataset(
        tmp_path / "ds",
        blocks=blocks,
        data_bytes=data_bytes,
        seed=seed,
        description=INFO_MARKER,
        fsync=False,
    )
    monkeypatch.undo()
    did = str(built.keypair.dataset_id)
    keys_dir = tmp_path / "keys"
    identities = IdentityStore(keys_dir)
    alice = identities.create("alice")
    store = ContentKeyStore(keys_dir)
    keys = store.load_or_create(did)
    envelope = add_recipient(
        keys.envelope, keys.ring, x25519_recipient(identities.public_key("alice"))
    )
    store.save(DatasetKeys(keys.ring, envelope, keys.keks))
    sealer = Sealer(keys.ring.current_key(), encode_envelope(envelope))
    return EncryptedWorld(built.path, built, did, sealer, alice, keys.ring, keys_dir)
