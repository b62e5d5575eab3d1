"""Key management: ``odfweb3 keys`` (identities, recipients, rotation, export/import).

Keys live under ``config.keystore_dir`` (see :mod:`odfweb3.crypto.keyfiles`). Nothing
here prints key material: identities are shown by public key and fingerprint, content
keys by epoch. Passphrases are never taken from the command line: from
``--passphrase-file``, the ``ODFWEB3_PASSPHRASE`` variable, or a prompt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odfweb3.errors import NotFound, UsageError

if TYPE_CHECKING:
    from odfweb3.backends import KeyNamer
    from odfweb3.cli.main import Context
    from odfweb3.crypto.envelope import Envelope
    from odfweb3.crypto.keyfiles import ContentKeyStore, DatasetKeys

__all__ = [
    "read_passphrase",
    "register",
]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``keys`` and its subcommands to the CLI."""
    # The form names from their own module: the codec would bring cryptography to every start-up.
    from odfweb3.crypto.names import ENCRYPTED, FORMATS, LIBP2P_CLEARTEXT, PEM_CLEARTEXT

    keys = sub.add_parser(
        "keys",
        parents=[common],
        help="encryption keys: identities, recipients, rotation, export/import",
        description="Manage the keys of encrypted datasets. Content keys are wrapped for each "
        "recipient (an X25519 identity or a passphrase) in a key envelope published beside "
        "the dataset. Rotation gives new objects a new key; old ciphertext stays readable by "
        "whoever had the old key.",
    )
    ks = keys.add_subparsers(dest="keys_command", metavar="SUBCOMMAND")
    ks.required = True

    ident = ks.add_parser("identity", parents=[common], help="your X25519 identities")
    isub = ident.add_subparsers(dest="identity_command", metavar="ACTION")
    isub.required = True
    p = isub.add_parser("new", parents=[common], help="create an identity")
    p.add_argument("name")
    p.set_defaults(handler=_identity_new)
    p = isub.add_parser("list", parents=[common], help="list identities")
    p.set_defaults(handler=_identity_list)
    p = isub.add_parser("export", parents=[common], help="print an identity's public key")
    p.add_argument("name")
    p.set_defaults(handler=_identity_export)

    rec = ks.add_parser("recipients", parents=[common], help="who can open a dataset's keys")
    rsub = rec.add_subparsers(dest="recipients_command", metavar="ACTION")
    rsub.required = True
    p = rsub.add_parser("add", parents=[common], help="give a recipient every epoch's key")
    p.add_argument("dataset", help="did:odf:… or dataset directory")
    p.add_argument(
        "pubkey",
        nargs="?",
        help="a public key (as `keys identity export` prints it) or a local identity name",
    )
    _passphrase_args(p, flag=True)
    p.add_argument("--label", default="default", help="name of a passphrase recipient")
    p.set_defaults(handler=_recipients_add)
    p = rsub.add_parser(
        "remove", parents=[common], help="drop a recipient from future epochs (and rotate)"
    )
    p.add_argument("dataset", help="did:odf:… or dataset directory")
    p.add_argument("recipient", help="recipient ID (x25519:…, passphrase:LABEL) or public key")
    p.add_argument("--no-rotate", action="store_true", help="do not start a new epoch now")
    p.add_argument(
        "--purge", action="store_true", help="also drop its old entries (cosmetic: see docs)"
    )
    p.set_defaults(handler=_recipients_remove)
    p = rsub.add_parser("list", parents=[common], help="list recipients and their epochs")
    p.add_argument("dataset", help="did:odf:… or dataset directory")
    p.set_defaults(handler=_recipients_list)

    p = ks.add_parser("rotate", parents=[common], help="new content key for future objects")
    p.add_argument("dataset", help="did:odf:… or dataset directory")
    p.set_defaults(handler=_rotate)

    p = ks.add_parser(
        "export",
        parents=[common],
        help="write an IPNS key (for another machine or Kubo) or a dataset's content keys",
        description="With an IPNS name (k51…), or a dataset and --ipns: write the key that "
        "signs that name, for `odfweb3 keys import` on another machine (passphrase-protected, "
        f"the default {ENCRYPTED}) or for Kubo's `ipfs key import` (--format "
        f"{PEM_CLEARTEXT} or {LIBP2P_CLEARTEXT}: the key in the clear). With a dataset: "
        "its content keys wrapped by a passphrase. The file is written with mode 0600 and "
        "an IPNS key file is never replaced.",
    )
    p.add_argument(
        "what", metavar="NAME", help="an IPNS name (k51…), or did:odf:… / a dataset directory"
    )
    p.add_argument("--out", type=Path, required=True, help="file to write (mode 0600)")
    p.add_argument(
        "--ipns", action="store_true", help="with a dataset: export its IPNS key instead"
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=ENCRYPTED,
        help=f"IPNS key file form (default {ENCRYPTED}; the others are what Kubo reads)",
    )
    _passphrase_args(p, flag=False)
    p.set_defaults(handler=_export)

    p = ks.add_parser(
        "import",
        parents=[common],
        help="import an IPNS key file, or content keys from an envelope file",
        description="An IPNS key file (from keys export, or Kubo's ipfs key export in either "
        "form) is kept in the keystore for its dataset; a key envelope's content keys are "
        "merged with the dataset's. Keys are never replaced: a second key of a dataset is "
        "kept beside the first, for a target already published under its name.",
    )
    p.add_argument("file", type=Path, help="an IPNS key file or a key envelope")
    p.add_argument("--identity", help="open an envelope with this identity, not a passphrase")
    p.add_argument(
        "--dataset",
        help="did:odf:… or dataset directory the IPNS key signs for (a cleartext file "
        "does not say)",
    )
    _passphrase_args(p, flag=False)
    p.set_defaults(handler=_import)


def _passphrase_args(p: argparse.ArgumentParser, *, flag: bool) -> None:
    if flag:
        p.add_argument("--passphrase", action="store_true", help="add a passphrase recipient")
    p.add_argument("--passphrase-file", type=Path, help="read the passphrase from this file")


# --- helpers ---------------------------------------------------------------------------


#: How many times a person at a terminal may type a secret (as sudo and ssh allow).
TRIES = 3


def prompts(ctx: Context, file: Path | None) -> bool:
    """Whether :func:`read_passphrase` would ask the terminal (so a wrong answer can be
    asked again): no file, no environment variable, stdin a terminal."""
    from odfweb3.crypto.names import PASSPHRASE_ENV

    return file is None and not ctx.env.get(PASSPHRASE_ENV) and sys.stdin.isatty()


def prompt_secret(ctx: Context, what: str, *, confirm: bool) -> str:
    """``what`` typed on the terminal (not echoed); with ``confirm`` typed twice, up to
    :data:`TRIES` times until both agree."""
    import getpass  # termios: only when a password is typed

    for attempt in range(1, TRIES + 1):
        text = getpass.getpass(f"{what}: ")
        if not confirm or getpass.getpass(f"{what} again: ") == text:
            return text
        if attempt < TRIES:
            ctx.out.warn(f"the two did not match; try again ({TRIES - attempt} left)")
    raise UsageError(f"{what} typed differently {TRIES} times; nothing was changed")


def read_passphrase(
    ctx: Context,
    file: Path | None,
    *,
    confirm: bool,
    what: str = "passphrase",
    dataset: str | None = None,
) -> str:
    """The passphrase from ``file``, ``$ODFWEB3_PASSPHRASE`` or a prompt (never argv); the
    prompt names ``dataset`` when known."""
    from odfweb3.crypto.names import PASSPHRASE_ENV

    if file is not None:
        text = file.read_text("utf-8").rstrip("\r\n")
    elif ctx.env.get(PASSPHRASE_ENV):
        text = str(ctx.env[PASSPHRASE_ENV])
    elif sys.stdin.isatty():
        text = prompt_secret(ctx, f"{what} of {dataset}" if dataset else what, confirm=confirm)
    else:
        raise UsageError(f"no passphrase: use --passphrase-file FILE or set {PASSPHRASE_ENV}")
    if not text:
        raise UsageError("the passphrase must not be empty")
    return text


def _store(ctx: Context) -> ContentKeyStore:
    from odfweb3.crypto.keyfiles import ContentKeyStore

    return ContentKeyStore(ctx.config.keystore_dir)


def _recipients_json(env: Envelope) -> list[dict[str, Any]]:
    from odfweb3.crypto.envelope import encode_public_key

    out = []
    for r in env.recipients:
        item: dict[str, Any] = {
            "id": r.id,
            "kind": r.kind,
            "active": r.active,
            "epochs": env.epochs_of(r.id),
        }
        if r.kind == "x25519":
            item["publicKey"] = encode_public_key(r.public_key)
        out.append(item)
    return out


def _show_keys(ctx: Context, keys: DatasetKeys, path: Path, action: str) -> None:
    recipients = _recipients_json(keys.envelope)
    data = {
        "datasetId": keys.ring.dataset_id,
        "currentEpoch": keys.ring.current,
        "epochs": keys.ring.epochs,
        "recipients": recipients,
        "keyFile": str(path),
    }

    def human() -> str:
        lines = [f"{action}: {keys.ring.dataset_id}, current epoch {keys.ring.current}"]
        for r in recipients:
            state = "" if r["active"] else " (removed: no new epochs)"
            lines.append(f"  {r['id']}  epochs {r['epochs']}{state}")
        if not keys.envelope.recipients:
            lines.append("  no recipients yet: only this machine can read what it publishes")
        return "\n".join(lines)

    ctx.out.result(data, human)


# --- identities ------------------------------------------------------------------------


def _identity_new(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import encode_public_key, fingerprint
    from odfweb3.crypto.keyfiles import IdentityStore

    store = IdentityStore(ctx.config.keystore_dir)
    store.create(args.name)
    pub = store.public_key(args.name)
    data = {"name": args.name, "publicKey": encode_public_key(pub), "id": fingerprint(pub)}
    ctx.out.result(
        data,
        lambda: f"created identity {args.name} ({data['id']})\n{data['publicKey']}",
    )
    return 0


def _identity_list(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import encode_public_key, fingerprint
    from odfweb3.crypto.keyfiles import IdentityStore

    store = IdentityStore(ctx.config.keystore_dir)
    items = []
    for name in store.list():
        pub = store.public_key(name)
        items.append({"name": name, "id": fingerprint(pub), "publicKey": encode_public_key(pub)})
    ctx.out.result(
        {"identities": items},
        lambda: "\n".join(f"{i['name']:<20} {i['id']}" for i in items) or "no identities",
    )
    return 0


def _identity_export(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import encode_public_key, fingerprint
    from odfweb3.crypto.keyfiles import IdentityStore

    pub = IdentityStore(ctx.config.keystore_dir).public_key(args.name)
    data = {"name": args.name, "publicKey": encode_public_key(pub), "id": fingerprint(pub)}
    ctx.out.result(data, lambda: str(data["publicKey"]), product=True)
    return 0


# --- recipients and rotation -----------------------------------------------------------


def _public_key_arg(ctx: Context, text: str) -> bytes:
    from odfweb3.crypto.envelope import PUBLIC_KEY_PREFIX, decode_public_key
    from odfweb3.crypto.keyfiles import IdentityStore

    if text.startswith(PUBLIC_KEY_PREFIX):
        return decode_public_key(text)
    return IdentityStore(ctx.config.keystore_dir).public_key(text)


def _recipients_add(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import add_recipient, passphrase_recipient, x25519_recipient
    from odfweb3.crypto.keyfiles import DatasetKeys
    from odfweb3.publish.dataset_id import verified_dataset_id

    if args.passphrase == (args.pubkey is not None):
        raise UsageError("recipients add: give either a public key or --passphrase")
    did = verified_dataset_id(args.dataset)
    store = _store(ctx)
    keys = store.load_or_create(did)
    if args.passphrase:
        pw = read_passphrase(ctx, args.passphrase_file, confirm=True, dataset=did)
        recipient, kek = passphrase_recipient(pw, label=args.label)
        env = add_recipient(keys.envelope, keys.ring, recipient, kek)
        keks = dict(keys.keks) | {recipient.id: kek}
    else:
        recipient = x25519_recipient(_public_key_arg(ctx, args.pubkey))
        env = add_recipient(keys.envelope, keys.ring, recipient)
        keks = dict(keys.keks)
    keys = DatasetKeys(keys.ring, env, keks)
    _show_keys(ctx, keys, store.save(keys), f"added {recipient.id}")
    return 0


def _recipient_id(text: str) -> str:
    from odfweb3.crypto.envelope import PUBLIC_KEY_PREFIX, decode_public_key, fingerprint

    if text.startswith(PUBLIC_KEY_PREFIX):
        return fingerprint(decode_public_key(text))
    return text


def _recipients_remove(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import remove_recipient, rotate_envelope
    from odfweb3.crypto.keyfiles import DatasetKeys
    from odfweb3.publish.dataset_id import verified_dataset_id

    did = verified_dataset_id(args.dataset)
    store = _store(ctx)
    keys = store.load(did)
    rid = _recipient_id(args.recipient)
    env = remove_recipient(keys.envelope, rid, purge=args.purge)
    keks = {k: v for k, v in keys.keks.items() if k != rid}
    ring = keys.ring
    if not args.no_rotate:
        ring = ring.rotated()
        env = rotate_envelope(env, ring, keks)
    keys = DatasetKeys(ring, env, keks)
    _show_keys(ctx, keys, store.save(keys), f"removed {rid}")
    if args.no_rotate:
        ctx.out.warn("no new epoch: run `odfweb3 keys rotate` before publishing new objects")
    ctx.out.warn(
        f"{rid} can still read everything published under the epochs it had; "
        "published ciphertext cannot be deleted"
    )
    return 0


def _recipients_list(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.publish.dataset_id import verified_dataset_id

    did = verified_dataset_id(args.dataset)
    store = _store(ctx)
    _show_keys(ctx, store.load(did), store.path_for(did), "recipients")
    return 0


def _rotate(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import rotate_envelope
    from odfweb3.crypto.keyfiles import DatasetKeys
    from odfweb3.publish.dataset_id import verified_dataset_id

    did = verified_dataset_id(args.dataset)
    store = _store(ctx)
    keys = store.load(did)
    ring = keys.ring.rotated()
    keys = DatasetKeys(ring, rotate_envelope(keys.envelope, ring, keys.keks), keys.keks)
    _show_keys(ctx, keys, store.save(keys), "rotated")
    return 0


# --- export / import -------------------------------------------------------------------


def _export(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.backends import key_namer
    from odfweb3.crypto.envelope import (
        add_recipient,
        encode_envelope,
        new_envelope,
        passphrase_recipient,
    )
    from odfweb3.crypto.ipns_keyfile import ENCRYPTED
    from odfweb3.crypto.keyfiles import write_private
    from odfweb3.publish.dataset_id import verified_dataset_id

    namer = key_namer()
    named = namer.named_key(args.what) if namer is not None else None
    if named is not None or args.ipns:
        return _export_ipns(args, ctx, named)
    if args.format != ENCRYPTED:
        raise UsageError("--format is for IPNS keys: give an IPNS name, or --ipns")
    did = verified_dataset_id(args.what)
    keys = _store(ctx).load(did)
    pw = read_passphrase(ctx, args.passphrase_file, confirm=True, what="export passphrase")
    recipient, kek = passphrase_recipient(pw, label="export")
    env = add_recipient(new_envelope(keys.ring), keys.ring, recipient, kek)
    write_private(args.out, encode_envelope(env), replace=True, private_dir=False)
    data = {"datasetId": did, "epochs": keys.ring.epochs, "file": str(args.out)}
    ctx.out.result(data, lambda: f"wrote epochs {keys.ring.epochs} of {did} to {args.out}")
    return 0


def _namer() -> KeyNamer:
    from odfweb3.backends import key_namer

    namer = key_namer()
    if namer is None:
        raise UsageError("no installed backend names keys (IPNS): reinstall odfweb3")
    return namer


def _export_ipns(args: argparse.Namespace, ctx: Context, public_key: bytes | None) -> int:
    """``keys export NAME``: the key behind an IPNS name, for another machine or Kubo."""
    from odfweb3.crypto.ipns_keyfile import ENCRYPTED, encode_key_file
    from odfweb3.crypto.keyfiles import write_private
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.dataset_id import verified_dataset_id

    keystore = Keystore(ctx.config.keystore_dir)
    namer = _namer()
    if public_key is None:  # --ipns DATASET: the dataset's own key
        did = verified_dataset_id(args.what)
        key = keystore.load(did)
    else:
        labels = keystore.labels_with(public_key)
        if not labels:
            raise NotFound(
                f"no key for {namer.key_name(public_key)} in {keystore.root}: export it on "
                "the machine that publishes it"
            )
        did = labels[0]
        found = keystore.find(did, public_key)
        if found is None:  # removed since labels_with looked
            raise NotFound(f"no key for {namer.key_name(public_key)} in {keystore.root}")
        key = found
    name = namer.key_name(key.public_key().public_bytes_raw())
    pw = None
    if args.format == ENCRYPTED:
        pw = read_passphrase(ctx, args.passphrase_file, confirm=True, what="export passphrase")
    data = encode_key_file(key, args.format, dataset_id=did, passphrase=pw)
    write_private(args.out, data, replace=False, private_dir=False)
    if args.format != ENCRYPTED:
        ctx.out.warn(
            f"{args.out} holds the key of {name} in the clear: whoever reads it can sign "
            f"records for the name; delete it once imported (ipfs key import NAME -f "
            f"{args.format} {args.out})"
        )
    result = {"ipnsName": name, "datasetId": did, "format": args.format, "file": str(args.out)}
    ctx.out.result(result, lambda: f"wrote the key of {name} ({did}) to {args.out}")
    return 0


def _import(args: argparse.Namespace, ctx: Context) -> int:
    from odfweb3.crypto.envelope import decode_envelope, new_envelope, open_envelope
    from odfweb3.crypto.ipns_keyfile import MAX_KEY_FILE, is_key_file
    from odfweb3.crypto.keyfiles import DatasetKeys, IdentityStore

    try:
        with open(args.file, "rb") as f:
            raw = f.read(max(MAX_KEY_FILE, 16 << 20) + 1)
    except OSError as exc:
        raise NotFound(f"cannot read {args.file}: {exc.strerror}") from exc
    if is_key_file(raw):
        return _import_ipns(args, ctx, raw)
    if args.dataset:
        raise UsageError(f"{args.file} is a key envelope: it names its dataset, drop --dataset")
    env = decode_envelope(raw)
    if args.identity:
        ring = open_envelope(env, IdentityStore(ctx.config.keystore_dir).load(args.identity))
    else:
        ring = open_envelope(env, read_passphrase(ctx, args.passphrase_file, confirm=False))
    store = _store(ctx)
    if store.has(env.dataset_id):
        old = store.load(env.dataset_id)
        keys = DatasetKeys(old.ring.merged(ring), old.envelope, old.keks)
    else:
        keys = DatasetKeys(ring, new_envelope(ring))
    _show_keys(ctx, keys, store.save(keys), f"imported epochs {ring.epochs}")
    return 0


def _import_ipns(args: argparse.Namespace, ctx: Context, raw: bytes) -> int:
    """``keys import FILE``: an IPNS key kept for its dataset (never replacing a key)."""
    from odfweb3.crypto.ipns_keyfile import decode_key_file
    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.dataset_id import verified_dataset_id

    file = decode_key_file(
        raw,
        passphrase=lambda: read_passphrase(ctx, args.passphrase_file, confirm=False),
        where=str(args.file),
    )
    did = verified_dataset_id(args.dataset) if args.dataset else None
    if file.dataset_id is not None and did is not None and did != file.dataset_id:
        raise UsageError(
            f"{args.file} is the key of {file.dataset_id}, not {did}; nothing was imported"
        )
    did = did or file.dataset_id
    if did is None:
        raise UsageError(
            f"{args.file} ({file.format}) does not say which dataset it signs for: "
            "add --dataset did:odf:… or the dataset directory"
        )
    keystore = Keystore(ctx.config.keystore_dir)
    path, new = keystore.add(did, file.key)
    name = _namer().key_name(file.key.public_key().public_bytes_raw())
    data = {"ipnsName": name, "datasetId": did, "keyFile": str(path), "new": new}
    what = "imported" if new else "already had"
    ctx.out.result(data, lambda: f"{what} the key of {name} for {did} in {keystore.root}")
    return 0
