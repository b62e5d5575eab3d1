"""The I/O around the encryption decision of a publish: the facts it needs, and what is
stored once it stands.

The decision itself is :func:`odfweb3.crypto.policy.decide_encryption` (pure); this module
gathers its inputs (the caller's flags, the ``datasets:`` settings, this machine's record of
the dataset, the keystore) and records the first encrypted publish
(:mod:`odfweb3.publish.dataset_settings`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from odfweb3.api.hooks import Hooks
from odfweb3.config import Config
from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys
from odfweb3.crypto.policy import EncryptionDecision, EncryptionFacts, publish_sealer
from odfweb3.crypto.sealer import Discovery, Sealer, discovery_setting, sensitive_setting
from odfweb3.errors import ConflictError
from odfweb3.odf.kamu_workspace import kamu_alias_of
from odfweb3.publish.dataset_id import chain_cache, dataset_id_of
from odfweb3.publish.dataset_settings import DatasetSettingsStore

__all__ = [
    "before_sending",
    "encryption_facts",
    "kamu_names",
    "remember_encrypted",
    "sealer_for",
]


def _anything_encrypted(config: Config) -> bool:
    """Whether any dataset could be encrypted here: settings of a dataset, a content key,
    a ``datasets:`` table. When none is, a publish needs no dataset ID before it starts
    (finding it walks the chain); the target's own facts are checked by the executor."""
    if config.get("datasets"):
        return True
    if ContentKeyStore(config.keystore_dir).list():
        return True
    root = DatasetSettingsStore(config.state_dir).root
    return root.is_dir() and any(root.iterdir())


def encryption_facts(
    config: Config,
    dataset: str,
    *,
    cwd: Path,
    encrypt: bool,
    no_encrypt: bool,
    confirmed: bool,
    other_scheme: bool,
) -> EncryptionFacts:
    """The facts the decision to encrypt a publish of ``dataset`` starts from (the target's
    come later, from its inspection). ``dataset_id`` is empty when nothing here could make
    it encrypted and no flag asks (the executor fills it in from the chain it loads)."""
    base = EncryptionFacts(
        dataset=dataset,
        dataset_id="",
        encrypt=encrypt,
        no_encrypt=no_encrypt,
        confirmed=confirmed,
        other_scheme=other_scheme,
    )
    if not (encrypt or no_encrypt or _anything_encrypted(config)):
        return base
    did, _ = dataset_id_of(dataset, chain_cache(config.state_dir))
    settings = config.dataset_settings_for(
        Path(dataset), did, cwd=cwd, names=kamu_names(Path(dataset))
    )
    local = DatasetSettingsStore(config.state_dir).load(did)
    has_key = ContentKeyStore(config.keystore_dir).has(did)
    return EncryptionFacts(
        dataset=dataset,
        dataset_id=did,
        encrypt=encrypt,
        no_encrypt=no_encrypt,
        confirmed=confirmed,
        sensitive=sensitive_setting(settings, dataset),
        discovery=discovery_setting(settings, dataset),
        recorded=local.encrypted or has_key,
        recorded_private=local.private_drive,
        new_key=not has_key,
        other_scheme=other_scheme,
    )


def kamu_names(directory: Path) -> tuple[str, ...]:
    """kamu's names for the dataset directory (``account/name`` and ``name``), if it is a
    dataset of a kamu workspace: ``datasets:`` keys may name it so."""
    alias = kamu_alias_of(directory)
    if alias is None:
        return ()
    return tuple(dict.fromkeys((alias, alias.rpartition("/")[2])))


def sealer_for(
    config: Config, dataset_id: str, hooks: Hooks, *, discovery: Discovery = "none"
) -> tuple[Sealer, DatasetKeys | None]:
    """The sealer of an encrypted publish, and the new content keys to store before the
    first object is sent (its first encrypted publish from this keystore), or None.
    ``discovery``: the dataset's ``encryptedDiscovery`` (what it may say in plaintext)."""
    return publish_sealer(
        ContentKeyStore(config.keystore_dir),
        dataset_id,
        warn=hooks.warn,
        debug=hooks.debug,
        discovery=discovery,
    )


def before_sending(
    config: Config,
    dataset_id: str,
    target: str,
    decided: EncryptionDecision,
    new_keys: DatasetKeys | None,
    *,
    remember: bool,
    dry_run: bool,
    hooks: Hooks,
) -> None:
    """What a publish stores once the target was inspected and the decision stands, before
    anything is sent: the dataset's new content keys (not ``dry_run``), this machine's
    record of its encryption (``remember``).

    Raises:
        ConflictError: another odfweb3 created the dataset's content keys meanwhile.
    """
    if new_keys is not None and not dry_run:
        try:
            ContentKeyStore(config.keystore_dir).create(new_keys)
        except ConflictError:
            raise ConflictError(
                f"the content keys of {dataset_id} were created meanwhile by another "
                "odfweb3; run the publish again (nothing was sent)"
            ) from None
        hooks.warn(
            f"{dataset_id} has no recipients: only this keystore can decrypt it; add some with "
            "odfweb3 keys recipients add"
        )
    if decided.remember is not None and remember:
        remember_encrypted(config, dataset_id, target, decided, hooks)


def remember_encrypted(
    config: Config, dataset_id: str, target: str, decided: EncryptionDecision, hooks: Hooks
) -> None:
    """Record the dataset's first encrypted (or ArFS private drive) publish, as ``decided``."""
    store = DatasetSettingsStore(config.state_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    if decided.remember == "encrypted" and not store.load(dataset_id).encrypted:
        store.remember_encrypted(dataset_id, target, now)
        hooks.info(
            f"{dataset_id} is now published encrypted: every later publish of it, to any "
            f"target, is encrypted too (recorded in {store.path_for(dataset_id)})"
        )
    elif decided.remember == "arfs-private" and not store.load(dataset_id).private_drive:
        store.remember_private_drive(dataset_id, target, now)
        hooks.info(
            f"{dataset_id} is now an ArFS private drive: a later publish of it without "
            f"--arfs-private (or --encrypt) is refused (recorded in {store.path_for(dataset_id)})"
        )
