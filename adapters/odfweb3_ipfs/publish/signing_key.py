"""Which key signs a dataset's IPNS record on a target: one name per dataset and target.

A name never changes key, so before signing, a publish looks for the names the dataset is
already published under and signs only with the key of the one this target holds:

- **the target's own names** (``car:DIR``: ``publish.json`` and the ``<name>.ipns-record``
  files of this dataset; a Kubo node: the verified record the node holds for a candidate
  name) decide: their key must be in the keystore, else the publish is refused
  (:class:`~odfweb3.errors.SigningKeyMissing`, exit 77) before anything is sent (the
  executor asks, :class:`~odfweb3.publish.target.SigningTarget`);
- a target without a record of the dataset gets the dataset's key (``<keystore>/<id>.key``);
- with no key at all, **the other names** known here (this machine's publish states of the
  dataset on other targets, the ``car:`` directories it published to or has as remotes)
  refuse the same way: creating a key would fork the dataset under a second name;
- only then is a key created, and that is said once on stderr with where it lives and how
  to back it up.

:func:`plan_key` decides (pure, frozen result); :class:`KeyChooser` gathers the facts and
carries the decision out. A hostile ``publish.json`` or record can at worst cause a
refusal: keys come only from the keystore, chosen by their public key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError, FormatError, OdfWeb3Error, SigningKeyMissing
from odfweb3.odf.identity import DatasetId
from odfweb3.publish.offline import OfflineIndex
from odfweb3.publish.remotes import Remotes
from odfweb3.publish.state import (
    MAX_STATE_SIZE,
    PublishState,
    StateStore,
    load_state_file,
    load_summary_file,
)
from odfweb3_ipfs.formats.ipns import (
    MAX_RECORD_SIZE,
    RecordExpired,
    decode_record,
    verify_record,
)
from odfweb3_ipfs.formats.libp2p_keys import IpnsName, parse_ipns_name, public_key_bytes
from odfweb3_ipfs.publish.state import CarTyped, parse_ipns_facts

__all__ = [
    "KeyChooser",
    "KeyPlan",
    "KnownName",
    "dataset_name",
    "names_in_car_dir",
    "other_names",
    "plan_key",
]

RECORD_SUFFIX: Final = ".ipns-record"
_MAX_RECORD_FILES: Final = 64  # record files looked at in one car:DIR


@dataclass(frozen=True)
class KnownName:
    """A name the dataset is published under, and where that was seen (for messages)."""

    name: IpnsName
    where: str


@dataclass(frozen=True)
class KeyPlan:
    """What signs: ``use`` the key of ``name``, ``create`` one, or ``refuse`` (``name``'s key
    is not here; ``where`` it was seen)."""

    action: Literal["use", "create", "refuse"]
    name: IpnsName | None = None
    where: str = ""


def plan_key(
    target_names: Sequence[KnownName],
    others: Sequence[KnownName],
    held: Sequence[IpnsName],
) -> KeyPlan:
    """The decision, from facts only (see the module docstring).

    Args:
        target_names: the names this target holds a record of the dataset under.
        others: names of the dataset seen elsewhere (other targets, remotes).
        held: the names whose keys the keystore holds for the dataset, its own key first.
    """
    for known in target_names:
        if known.name in held:
            return KeyPlan("use", known.name, known.where)
    if target_names:
        return KeyPlan("refuse", target_names[0].name, target_names[0].where)
    if held:
        return KeyPlan("use", held[0])
    if others:
        return KeyPlan("refuse", others[0].name, others[0].where)
    return KeyPlan("create")


def dataset_name(dataset_id: str) -> IpnsName | None:
    """The name of the dataset's own identity key (``did:odf``'s key), if it parses."""
    try:
        return IpnsName.from_public_key(DatasetId.parse(dataset_id).public_key)
    except (OdfWeb3Error, ValueError):
        return None


def _name_in_state(state: PublishState | None, dataset_id: str) -> IpnsName | None:
    if state is None or state.dataset_id != dataset_id:
        return None
    try:
        text = parse_ipns_facts(state.record, f"publish state of {state.target}").name
        return parse_ipns_name(text) if text else None
    except OdfWeb3Error:  # a damaged or foreign state names nothing
        return None


def _name_of(summary: CarTyped | None, dataset_id: str) -> IpnsName | None:
    if summary is None or summary.dataset_id != dataset_id or not summary.record.name:
        return None
    try:
        return parse_ipns_name(summary.record.name)
    except OdfWeb3Error:  # a damaged or foreign state names nothing
        return None


def names_in_car_dir(
    out_dir: Path, dataset_id: str, summary: CarTyped | None = None
) -> list[KnownName]:
    """The names a ``car:DIR`` holds records of ``dataset_id`` under: ``publish.json``'s, then
    every ``<name>.ipns-record`` whose signature verifies (expired or not) and whose
    ``_odf.datasetId`` is the dataset's (a plain record under a name we already know counts)."""
    out: list[KnownName] = []
    named = _name_of(summary, dataset_id)
    if named is not None:
        out.append(KnownName(named, f"{out_dir}/publish.json"))
    try:
        files = sorted(p for p in out_dir.iterdir() if p.name.endswith(RECORD_SUFFIX))
    except OSError:
        return out
    for path in files[:_MAX_RECORD_FILES]:
        try:
            name = parse_ipns_name(path.name[: -len(RECORD_SUFFIX)])
            if name in (k.name for k in out):
                continue
            with open(path, "rb") as f:
                raw = f.read(MAX_RECORD_SIZE + 1)
            try:
                odf = verify_record(raw, name).odf
            except RecordExpired:  # its signature was checked before its expiry
                odf = decode_record(raw).odf
        except (OdfWeb3Error, OSError):
            continue
        if odf is not None and odf.dataset_id == dataset_id:
            out.append(KnownName(name, str(path)))
    return out


def other_names(state_dir: Path, dataset_id: str, *, exclude: str) -> list[KnownName]:
    """Names of ``dataset_id`` known on this machine outside the target ``exclude``: its
    publish states on other IPFS targets, the ``car:`` directories it published to
    (``offline-targets.json``) and the ``car:`` remotes. Best effort: an unreadable source
    names nothing."""
    out: list[KnownName] = []
    seen: set[IpnsName] = set()

    def add(name: IpnsName | None, where: str) -> None:
        if name is not None and name not in seen:
            seen.add(name)
            out.append(KnownName(name, where))

    for path in _state_files(state_dir, dataset_id):
        try:
            state = load_state_file(path)
        except OdfWeb3Error:
            continue
        if state is not None and state.target != exclude:
            add(_name_in_state(state, dataset_id), f"the publish state of {state.target}")
    dirs: list[str] = []
    with contextlib.suppress(OdfWeb3Error, OSError):
        dirs += [e.target for e in OfflineIndex(state_dir).entries() if e.dataset_id == dataset_id]
    with contextlib.suppress(OdfWeb3Error, OSError):
        dirs += [t for t in Remotes(state_dir).load().values() if t.startswith("car:")]
    for target in dict.fromkeys(dirs):
        if target.rstrip("/") == exclude.rstrip("/"):
            continue
        out_dir = Path(target.partition(":")[2])
        summary = _summary(out_dir)
        if summary is not None:
            add(_name_in_state(summary, dataset_id), f"{out_dir}/publish.json")
    return out


def _state_files(root: Path, dataset_id: str) -> Iterator[Path]:
    folder = StateStore(root).path_for(dataset_id, "-").parent
    with contextlib.suppress(OSError):
        yield from sorted(folder.glob("*.json"))


def _summary(out_dir: Path) -> PublishState | None:
    path = out_dir / "publish.json"
    try:
        if path.stat().st_size > MAX_STATE_SIZE:
            return None
        return load_summary_file(path)[0]
    except (OdfWeb3Error, OSError):
        return None


class KeyChooser:
    """Carries :func:`plan_key`'s decision out for one target.

    Args:
        keystore: the datasets' keys.
        target: the target's name (``car:/abs``, ``ipfs:URL``), for messages.
        announce: says a created key, once (the CLI: stderr).
        others: the dataset's names known outside the target (:func:`other_names`).
    """

    def __init__(
        self,
        keystore: Keystore,
        target: str,
        *,
        announce: Callable[[str], None] | None = None,
        others: Callable[[str], Sequence[KnownName]] | None = None,
    ) -> None:
        self.keystore = keystore
        self.target = target
        self.announce = announce or (lambda text: None)
        self.others = others or (lambda dataset_id: ())
        self._plan: tuple[str, KeyPlan] | None = None

    def held(self, dataset_id: str) -> list[IpnsName]:
        """The names whose keys the keystore holds for the dataset (its own key first)."""
        return [
            IpnsName.from_public_key(public_key_bytes(k)) for k in self.keystore.keys_of(dataset_id)
        ]

    def decide(self, dataset_id: str, target_names: Sequence[KnownName]) -> KeyPlan:
        """Decide (step 2, ``inspect``); a refusal is raised by :meth:`check`, which the
        executor calls once its own refusals (e.g. plaintext over ciphertext) passed, in a
        dry run too, and ``upload`` first thing: before anything is sent."""
        held = self.held(dataset_id)
        others: Sequence[KnownName] = ()
        if not target_names and not held:
            others = self.others(dataset_id)
        plan = plan_key(target_names, others, held)
        self._plan = (dataset_id, plan)
        return plan

    def _refusal(self, dataset_id: str) -> SigningKeyMissing | None:
        if self._plan is None or self._plan[0] != dataset_id or self._plan[1].action != "refuse":
            return None
        plan = self._plan[1]
        return SigningKeyMissing(
            f"{self.target}: {dataset_id} is published under {plan.name} ({plan.where}) "
            f"and its key is not in {self.keystore.root}: on the machine that has it run "
            f"`odfweb3 keys export {plan.name} --out FILE`, here `odfweb3 keys import "
            "FILE`; nothing was sent"
        )

    def check(self, dataset_id: str) -> None:
        """Raise the refusal :meth:`decide` came to, if it did.

        Raises:
            SigningKeyMissing: the dataset is published under a name whose key is not here.
        """
        refusal = self._refusal(dataset_id)
        if refusal is not None:
            raise refusal

    def key(self, dataset_id: str) -> Ed25519PrivateKey:
        """The key that signs (creating, and announcing, the dataset's first key if so
        decided). Without a decision for the dataset, decides with no target names."""
        if self._plan is None or self._plan[0] != dataset_id:
            self.decide(dataset_id, ())
        self.check(dataset_id)
        assert self._plan is not None
        plan = self._plan[1]
        if plan.action == "use":
            assert plan.name is not None
            raw = plan.name.inlined_public_key()
            key = self.keystore.find(dataset_id, raw) if raw is not None else None
            if key is None:
                raise FormatError(f"the keystore lost the key of {plan.name} during the publish")
            return key
        try:
            key = self.keystore.generate(dataset_id)
        except ConflictError:  # another process created it meanwhile: theirs, not ours
            key = self.keystore.load(dataset_id)
        else:
            name = IpnsName.from_public_key(public_key_bytes(key))
            self.announce(
                f"created the IPNS key of {dataset_id} ({name}) in "
                f"{self.keystore.path_for(dataset_id)}; back it up, a lost key is a lost name: "
                f"`odfweb3 keys export {name} --out FILE`"
            )
        self._plan = (dataset_id, KeyPlan("use", IpnsName.from_public_key(public_key_bytes(key))))
        return key
