"""A replica of an encrypted publish, decrypted with this keystore's keys (pull, verify,
resolve; docs/security.md, "Encryption").

The keys come from the keystore: the dataset's own content keys if it holds them, else the
published key envelope opened with each local identity in turn, else (when the envelope has
passphrase recipients) with the passphrase the caller's callback supplies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from odfweb3.crypto.names import PASSPHRASE_ENV
from odfweb3.errors import DecryptionError
from odfweb3.read.replica import Replica
from odfweb3.read.sealed_replica import DecryptingReplica, KeyEnvelopeSource, SealedHeadBinder

__all__ = ["PASSPHRASE_ENV", "decrypting_replica"]

# PASSPHRASE_ENV: where the CLI (and a caller's passphrase callback) may read an envelope's
# passphrase; defined in odfweb3.crypto.names, which the CLI's parser imports without this.


def _ignore(_: str) -> None:
    return None


def decrypting_replica(
    replica: Replica,
    keystore_dir: Path,
    *,
    passphrase: Callable[[str], str] | None = None,
    debug: Callable[[str], None] = _ignore,
    tries: int = 1,
    retry: Callable[[str], None] | None = None,
) -> Replica:
    """``replica``, decrypted when it serves an encrypted publish; else ``replica`` itself.

    ``passphrase`` (given the dataset ID, for the prompt to name it) is asked only when no
    local key opens the envelope and the envelope has passphrase recipients; None when the
    caller has no way to supply one. A prompt may be asked ``tries`` times, ``retry`` told
    after each wrong passphrase (``odfweb3.crypto.policy.unlock_envelope``).

    Raises:
        DecryptionError: the replica is encrypted and no local key or passphrase opens it.
    """
    if not isinstance(replica, KeyEnvelopeSource):
        return replica
    raw = replica.key_envelope()
    if raw is None:
        return replica
    # Loaded for an encrypted replica only: a plain pull compiles none of it (where no
    # bytecode is written, every module a command loads is compiled again).
    from odfweb3.crypto.envelope import decode_envelope
    from odfweb3.crypto.keyfiles import ContentKeyStore, IdentityStore
    from odfweb3.crypto.policy import unlock_envelope

    envelope = decode_envelope(raw)
    did = envelope.dataset_id
    by_passphrase = any(r.kind == "passphrase" for r in envelope.recipients)
    ring = unlock_envelope(
        envelope,
        ContentKeyStore(keystore_dir),
        IdentityStore(keystore_dir),
        passphrase=(lambda: passphrase(did)) if passphrase is not None else None,
        where=replica.name,
        debug=debug,
        tries=tries,
        retry=retry,
    )
    if ring is None:
        hint = (
            f", or give its passphrase with --passphrase-file FILE / {PASSPHRASE_ENV}"
            if by_passphrase
            else ""
        )
        raise DecryptionError(
            f"{replica.name}: {did} is encrypted and no key in {keystore_dir} "
            "opens its key envelope; ask a key holder to run odfweb3 keys recipients add "
            f"with your identity's public key{hint}"
        )
    if isinstance(replica, SealedHeadBinder):
        # ipfs://CID --key-envelope: no record, so the head comes from refs/head, bound to
        # the keys that open it.
        replica.bind_sealed_head(ring)
    return DecryptingReplica(replica, ring)
