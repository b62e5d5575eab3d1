"""The key policy: whether a publish encrypts, which key, and which local keys open a replica.

Whether (:func:`decide_encryption`, pure): encryption is a property of the dataset, not of
one command. Once a dataset was published encrypted from here (this machine remembers it,
:mod:`odfweb3.publish.dataset_settings`), or a target holds its ciphertext (its state or
the record it serves names a key envelope), a publish without flags is encrypted, or
refused where it cannot be (no local record: ``--encrypt`` needs the dataset's keys);
only ``--no-encrypt`` with a confirmation (``--yes``, or yes on a terminal) publishes
plaintext. ``sensitive: true`` in the configuration refuses plaintext whatever the flags.

Encrypting (``publish [--encrypt]``, :func:`publish_sealer`): the dataset's content key
(epoch 1 created on its first encrypted publish) seals every object, and its key envelope is
published beside the data.

Decrypting (pull, verify, resolve, :func:`unlock_envelope`), in this order:

1. the dataset's own content keys, if this keystore holds them;
2. each local identity the envelope lists as an x25519 recipient (and only those:
   an envelope cannot make us try every key we hold);
3. a passphrase, when the envelope has passphrase recipients and the caller can supply one.

docs/design.md, "Encryption". The CLI supplies the I/O: warnings, the passphrase prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from odfweb3.crypto.envelope import Envelope, encode_envelope, fingerprint, open_envelope
from odfweb3.crypto.keyfiles import (
    ContentKeyStore,
    DatasetKeys,
    IdentityStore,
    new_dataset_keys,
)
from odfweb3.crypto.keys import KeyRing
from odfweb3.crypto.sealer import Discovery, Sealer
from odfweb3.errors import DecryptionError, UsageError

__all__ = [
    "EncryptionDecision",
    "EncryptionFacts",
    "decide_encryption",
    "publish_sealer",
    "settle_encryption",
    "unlock_envelope",
]

Note = Callable[[str], None]


@dataclass(frozen=True)
class EncryptionFacts:
    """Everything the decision to encrypt one publish depends on.

    Attributes:
        dataset: the dataset as the user named it (for messages).
        dataset_id: its ``did:odf``.
        encrypt: ``--encrypt`` was given.
        no_encrypt: ``--no-encrypt`` was given.
        confirmed: plaintext confirmed (``--yes``, or yes at the terminal prompt).
        sensitive: ``sensitive: true`` in the configuration.
        recorded: this machine published it encrypted before (its local settings, or its
            content key in the keystore).
        recorded_private: this machine published it as an ArFS private drive before
            (``--arfs-private``, whose password odfweb3 never stores: a publish without a
            flag cannot follow it and is refused instead).
        new_key: this keystore holds no content key of the dataset: encrypting makes one.
            Over a target holding ciphertext (made with a key from elsewhere) that is
            refused: its old objects would stay under a key the new envelope does not open.
        other_scheme: encrypted another way (``--arfs-private``: an ArFS private drive).
        target: the target's name, once known.
        target_encrypted: the target holds ciphertext of the dataset (the
            :class:`~odfweb3.publish.target.RemoteView` of its inspection); False before.
        discovery: ``encryptedDiscovery`` in the configuration: what an encrypted publish
            says in plaintext (not part of the decision; the sealer carries it).
    """

    dataset: str
    dataset_id: str
    encrypt: bool = False
    no_encrypt: bool = False
    confirmed: bool = False
    sensitive: bool = False
    recorded: bool = False
    recorded_private: bool = False
    new_key: bool = False
    other_scheme: bool = False
    target: str | None = None
    target_encrypted: bool = False
    discovery: Discovery = "none"


@dataclass(frozen=True)
class EncryptionDecision:
    """What :func:`decide_encryption` decided.

    Attributes:
        encrypt: seal every object with the dataset's content key.
        refusal: the one line to refuse with (exit 64), or None.
        question: plaintext needs a confirmation: ask this on a terminal (yes: decide
            again with ``confirmed``); without a terminal, ``refusal`` stands.
        remember: record in the dataset's local settings that it is published
            ``"encrypted"`` or as an ``"arfs-private"`` drive (None: nothing new).
        note: a line for ``-v`` (why it encrypts without ``--encrypt``).
    """

    encrypt: bool
    refusal: str | None = None
    question: str | None = None
    remember: Literal["encrypted", "arfs-private"] | None = None
    note: str | None = None


def decide_encryption(facts: EncryptionFacts) -> EncryptionDecision:
    """Whether this publish is encrypted, or why it is refused (pure: module docstring).

    Called twice by a publish: before the target is opened (``target_encrypted`` False)
    and once it was inspected. The second call never turns a plain publish into an
    encrypted one (the target was opened with or without a sealer): a target holding
    ciphertext only adds a refusal or a question.
    """
    f = facts
    if f.encrypt and f.no_encrypt:
        return EncryptionDecision(False, refusal="give --encrypt or --no-encrypt, not both")
    if f.no_encrypt and f.other_scheme:
        return EncryptionDecision(
            False, refusal="--arfs-private encrypts (ArFS scheme): drop --no-encrypt"
        )
    if f.other_scheme:
        return EncryptionDecision(False, remember=None if f.recorded_private else "arfs-private")
    if (f.encrypt or (f.recorded and not f.no_encrypt)) and f.new_key and f.target_encrypted:
        return EncryptionDecision(
            True,
            refusal=f"{f.target} holds ciphertext of {f.dataset_id} made with a content key "
            "this keystore does not have: import it first (odfweb3 keys export on the machine "
            "that has it, odfweb3 keys import here), or a new key would leave its objects "
            "unreadable; nothing was sent",
        )
    if f.encrypt:
        return EncryptionDecision(True, remember=None if f.recorded else "encrypted")
    where = f"{f.target} holds ciphertext of {f.dataset_id}" if f.target_encrypted else None
    if f.recorded_private:
        where = f"{f.dataset} was published as an ArFS private drive from here before"
    if f.recorded:
        where = f"{f.dataset} was published encrypted from here before"
    if f.no_encrypt:
        if f.sensitive:
            return EncryptionDecision(
                False,
                refusal=f"{f.dataset} is marked `sensitive: true` in the configuration: it is "
                "only published encrypted; drop --no-encrypt (nothing was sent)",
            )
        if where is None or f.confirmed:
            return EncryptionDecision(False)
        return EncryptionDecision(
            False,
            refusal=f"{where}: publishing it in plaintext needs a confirmation: add --yes to "
            "--no-encrypt (plaintext once published can never be taken back; nothing was sent)",
            question=f"{where}. Publish it in PLAINTEXT anyway? Once published this cannot be "
            "taken back. [y/N] ",
        )
    if f.recorded:
        return EncryptionDecision(
            True,
            note=f"encrypting {f.dataset}: it was published encrypted from here before "
            "(--no-encrypt --yes publishes plaintext)",
        )
    if f.sensitive:
        return EncryptionDecision(
            False,
            refusal=f"{f.dataset} is marked `sensitive: true` in the configuration: publish it "
            "with --encrypt (an unencrypted publish can never be taken back)",
        )
    if f.recorded_private:
        return EncryptionDecision(
            False,
            refusal=f"{where}: publish it with --arfs-private (or --encrypt), or with "
            "--no-encrypt --yes to publish plaintext; nothing was sent",
        )
    if where is not None:
        return EncryptionDecision(
            False,
            refusal=f"{where}: publish it with --encrypt (on another machine, import its keys "
            "first: odfweb3 keys export there, odfweb3 keys import here; --arfs-private for "
            "an ArFS private drive), or with --no-encrypt --yes to publish plaintext over it; "
            "nothing was sent",
        )
    return EncryptionDecision(False)


def settle_encryption(
    facts: EncryptionFacts, ask: Callable[[str], bool]
) -> tuple[EncryptionFacts, EncryptionDecision]:
    """:func:`decide_encryption`, its question put to ``ask`` (False: no, or no terminal).

    Returns the facts as settled (``confirmed`` once answered yes, so the second call of a
    publish does not ask again) and the decision.

    Raises:
        UsageError: the decision is a refusal (a question not answered yes included).
    """
    decision = decide_encryption(facts)
    if decision.question is not None and ask(decision.question):
        facts = replace(facts, confirmed=True)
        decision = decide_encryption(facts)
    if decision.refusal is not None:
        raise UsageError(decision.refusal)
    return facts, decision


def publish_sealer(
    store: ContentKeyStore,
    dataset_id: str,
    *,
    warn: Note,
    debug: Note,
    discovery: Discovery = "none",
) -> tuple[Sealer, DatasetKeys | None]:
    """The sealer for an encrypted publish of ``dataset_id`` (:func:`decide_encryption`
    said it is one): its content key, and the keys to store (``store.create``) before the
    first object is sent when this is its first encrypted publish (epoch 1, in memory until
    the target was inspected; None when the keystore has them). ``discovery``: what the
    publish may say in plaintext (:data:`~odfweb3.crypto.sealer.Discovery`)."""
    created = None if store.has(dataset_id) else new_dataset_keys(dataset_id)
    keys = created if created is not None else store.load(dataset_id)
    # A new key has no recipients: said when it is stored (before anything is sent).
    if created is None and not any(r.active for r in keys.envelope.recipients):
        warn(
            f"{dataset_id} has no recipients: only this keystore can decrypt it; add some with "
            "odfweb3 keys recipients add"
        )
    debug(f"encrypting {dataset_id} with content key epoch {keys.ring.current}")
    sealer = Sealer(keys.ring.current_key(), encode_envelope(keys.envelope), discovery=discovery)
    return sealer, created


def unlock_envelope(
    envelope: Envelope,
    store: ContentKeyStore,
    identities: IdentityStore,
    *,
    passphrase: Callable[[], str] | None,
    where: str,
    debug: Note,
    tries: int = 1,
    retry: Note | None = None,
) -> KeyRing | None:
    """The keys that open ``envelope`` here (see the module docstring), or None.

    ``passphrase`` is called only when no local key opens the envelope and it has
    passphrase recipients; None when the caller cannot supply one. It is asked up to
    ``tries`` times (a person at a terminal: 3, as sudo and ssh allow; a file or the
    environment cannot change: 1), ``retry`` told after each wrong one.

    Raises:
        DecryptionError: the passphrase given opens no entry of the envelope.
    """
    did = envelope.dataset_id
    ring = store.load(did).ring if store.has(did) else None
    # Only the local identities the envelope lists as recipients.
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
        for attempt in range(1, max(1, tries) + 1):
            try:
                ring = open_envelope(envelope, passphrase())
                break
            except DecryptionError:
                if attempt >= tries:
                    wrong = "the passphrase opens" if tries == 1 else f"{tries} passphrases open"
                    raise DecryptionError(
                        f"{where}: {did}: {wrong} no entry of its key envelope (wrong passphrase?)"
                    ) from None
                if retry is not None:
                    retry(f"{did}: wrong passphrase; try again ({tries - attempt} left)")
        debug(f"{where}: opened the key envelope with a passphrase")
    return ring
