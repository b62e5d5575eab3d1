"""The key policy: which key encrypts a publish, and which local keys open a replica.

Encrypting (``publish [--encrypt]``, :func:`publish_sealer`): a publish is encrypted when
``--encrypt`` is given or the dataset is ``sensitive: true`` (a sensitive dataset without
``--encrypt`` is refused); the dataset's content key (epoch 1 created on its first encrypted
publish) seals every object, and its key envelope is published beside the data.

Decrypting (pull, verify, resolve, :func:`unlock_envelope`), in this order:

1. the dataset's own content keys, if this keystore holds them;
2. each local identity the envelope lists as an x25519 recipient (and only those: issue 16
   item 6, an envelope cannot make us try every key we hold);
3. a passphrase, when the envelope has passphrase recipients and the caller can supply one.

docs/design.md, "Encryption". The CLI supplies the I/O: warnings, the passphrase prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from odfweb3.crypto.envelope import Envelope, encode_envelope, fingerprint, open_envelope
from odfweb3.crypto.keyfiles import ContentKeyStore, IdentityStore
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.sealer import Sealer, encryption_required
from odfweb3.errors import DecryptionError

__all__ = ["publish_sealer", "unlock_envelope"]

Note = Callable[[str], None]


def publish_sealer(
    store: ContentKeyStore,
    dataset_id: str,
    settings: Mapping[str, Any],
    encrypt: bool,
    where: str,
    *,
    warn: Note,
    debug: Note,
) -> Sealer | None:
    """The sealer for a publish of ``dataset_id``, or None for a plain publish.

    Raises:
        UsageError: the dataset is ``sensitive: true`` but ``encrypt`` is false.
    """
    if not encryption_required(settings, encrypt, where):
        return None
    keys = store.load_or_create(dataset_id)
    if not any(r.active for r in keys.envelope.recipients):
        warn(
            f"{dataset_id} has no recipients: only this keystore can decrypt it; add some with "
            "odfweb3 keys recipients add"
        )
    debug(f"encrypting {dataset_id} with content key epoch {keys.ring.current}")
    return Sealer(keys.ring.current_key(), encode_envelope(keys.envelope))


def unlock_envelope(
    envelope: Envelope,
    store: ContentKeyStore,
    identities: IdentityStore,
    *,
    passphrase: Callable[[], str] | None,
    where: str,
    debug: Note,
) -> KeyRing | None:
    """The keys that open ``envelope`` here (see the module docstring), or None.

    ``passphrase`` is called only when no local key opens the envelope and it has
    passphrase recipients; None when the caller cannot supply one.

    Raises:
        DecryptionError: the passphrase given opens no entry of the envelope.
    """
    did = envelope.dataset_id
    ring = store.load(did).ring if store.has(did) else None
    # Only the local identities the envelope lists as recipients (issue 16 item 6).
    listed = {r.id for r in envelope.recipients if r.kind == "x25519"}
    mine = [] if ring is not None else identities.list()
    for name in [n for n in mine if fingerprint(identities.public_key(n)) in listed]:
        try:
            ring = open_envelope(envelope, identities.load(name))
        except DecryptionError:
            continue
        debug(f"{where}: opened the key envelope with identity {name}")
        break
    by_passphrase = any(r.kind == "passphrase" for r in envelope.recipients)
    if ring is None and by_passphrase and passphrase is not None:
        secret = passphrase()
        try:
            ring = open_envelope(envelope, secret)
        except DecryptionError:
            raise DecryptionError(
                f"{where}: {did}: the passphrase opens no entry of its key envelope "
                "(wrong passphrase?)"
            ) from None
        debug(f"{where}: opened the key envelope with a passphrase")
    return ring
