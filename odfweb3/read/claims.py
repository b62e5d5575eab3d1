"""Resolving a name to a dataset, and the checks that make the answer trustworthy.

A name (an IPNS name, a DNSLink domain, an IPFS CID, an Arweave record or a ``did:odf``)
leads, through an adapter, to a :class:`~odfweb3.read.replica.Replica` and to what the name's
record *claims* (:class:`NameClaims`): the head, the dataset ID, the record's sequence and
expiry, a discovery descriptor. Nothing claimed is believed until it is checked here
against the data the replica serves (docs/design.md, "Trust model": "every gateway and node is
untrusted"):

1. the head the replica serves (its ``refs/head``) must equal the head the record claims
   (an IPNS record's ``_odf.head``, an upload record's ``ODF-Head``);
2. the chain from that head is walked to the Seed, every block re-hashed;
3. the Seed's dataset ID must equal the ID the record claims (``_odf.datasetId``,
   ``ODF-Dataset-Id``) and, for a ``did:odf`` lookup, the ID asked for.

A failure of 1 or 3 raises :class:`~odfweb3.errors.ReplicaMismatch` naming both sides.

Encrypted publishes (docs/design.md, "Encryption"): a key holder's replica is decrypted
first and then checked exactly as above (``resolve_dataset(..., encrypted=True)``). A
reader without keys gets :func:`resolve_sealed`: the signed record's claims only (dataset
ID, head, sequence, expiry), marked ``encrypted`` and ``content_checked=False``, with a
note saying the chain was not walked. Like ``ipfs name resolve``, which verifies a record
and does not fetch what it points at, that is a successful resolution; callers that need
the content checked test ``content_checked``.
Title and license come from the descriptor when one is given and describes this dataset,
else from the chain's ``SetInfo`` / ``SetLicense`` events. This module imports no adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from odfweb3.descriptor import derive_title
from odfweb3.errors import ChainBroken, ReplicaMismatch, ResolutionError
from odfweb3.odf.chain import ChainEntry, walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.model_gen import Seed, SetInfo, SetLicense
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.read.replica import Replica

__all__ = [
    "NameClaims",
    "ResolvedDataset",
    "check_claims",
    "describe_chain",
    "descriptor_facts",
    "resolve_dataset",
    "resolve_sealed",
    "seed_dataset_id",
]


@dataclass(frozen=True)
class NameClaims:
    """What a name's record says, before it is checked against the data.

    Attributes:
        locator: where the dataset was found (``/ipfs/<cid>``, ``ar://<manifest>``, ...).
        dataset_id: the dataset ID the record claims, if it names one.
        head: the head the record claims, if it names one.
        sequence: the IPNS record's sequence number.
        expires_at: the IPNS record's validity (EOL).
        descriptor: the discovery descriptor (already verified against its hash), if any.
        notes: what the adapter could not verify, or chose (one line each).
    """

    locator: str
    dataset_id: str | None = None
    head: bytes | None = None
    sequence: int | None = None
    expires_at: datetime | None = None
    descriptor: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class ResolvedDataset:
    """A name, resolved and checked (see the module docstring).

    Attributes:
        head: the head; None only for an encrypted dataset read without keys and without
            a signed record (``ipfs://CID --key-envelope``).
        blocks: the chain's length; None when the chain was not walked.
        encrypted: the replica serves an encrypted publish.
        content_checked: the chain was walked and checked against the claims (False only
            for an encrypted dataset read without keys: :func:`resolve_sealed`).
    """

    ref: str
    dataset_id: str
    head: bytes | None
    locator: str
    blocks: int | None
    sequence: int | None = None
    expires_at: datetime | None = None
    title: str | None = None
    license: str | None = None
    notes: tuple[str, ...] = field(default=())
    encrypted: bool = False
    content_checked: bool = True

    def to_json(self) -> dict[str, object]:
        """Stable JSON form (documented in docs/resolve.md)."""
        return {
            "ref": self.ref,
            "datasetId": self.dataset_id,
            "head": multihash_to_str(self.head) if self.head is not None else None,
            "locator": self.locator,
            "blocks": self.blocks,
            "encrypted": self.encrypted,
            "contentChecked": self.content_checked,
            "sequence": self.sequence,
            "expires": self.expires_at.isoformat() if self.expires_at else None,
            "title": self.title,
            "license": self.license,
            "notes": list(self.notes),
        }

    def describe(self) -> str:
        """Human lines."""
        lines = [
            f"{self.ref}",
            f"  dataset:  {self.dataset_id}",
            f"  head:     {self._head_text()}",
            f"  locator:  {self.locator}",
        ]
        if self.encrypted:
            lines.append(
                "  content:  encrypted, decrypted and checked"
                if self.content_checked
                else "  content:  encrypted, NOT checked (no key): the signed record's claims only"
            )
        if self.sequence is not None:
            lines.append(f"  sequence: {self.sequence}")
        if self.expires_at is not None:
            lines.append(f"  expires:  {self.expires_at.isoformat()}")
        if self.title:
            lines.append(f"  title:    {self.title}")
        if self.license:
            lines.append(f"  license:  {self.license}")
        lines.extend(f"  note:     {n}" for n in self.notes)
        return "\n".join(lines)

    def _head_text(self) -> str:
        if self.head is None:
            return "unknown (encrypted, no signed record, no key)"
        text = multihash_to_str(self.head)
        return text if self.blocks is None else f"{text} ({self.blocks} blocks)"


def seed_dataset_id(chain: Sequence[ChainEntry]) -> str:
    """The dataset ID in the Seed of a whole verified chain (head first).

    Raises:
        ChainBroken: the last block is not a Seed.
    """
    seed = chain[-1].block.event if chain else None
    if not isinstance(seed, Seed) or seed.dataset_id is None:
        raise ChainBroken("the chain does not end at a Seed with an ID; cannot tell the dataset")
    return str(DatasetId.from_bytes(seed.dataset_id))


def check_claims(
    name: str,
    claims: NameClaims,
    served_head: bytes,
    seed_id: str,
    *,
    expect_dataset_id: str | None = None,
) -> None:
    """Check a record's claims against what the replica serves (rules 1 and 3).

    Raises:
        ReplicaMismatch: the served head or the Seed's ID is not what was claimed or asked.
    """
    if claims.head is not None and claims.head != served_head:
        raise ReplicaMismatch(
            f"{name}: the record says head {multihash_to_str(claims.head)} but refs/head is "
            f"{multihash_to_str(served_head)}; the node or gateway serves another dataset state"
        )
    for what, wanted in (("the record says", claims.dataset_id), ("asked for", expect_dataset_id)):
        if wanted is not None and DatasetId.parse(wanted) != DatasetId.parse(seed_id):
            raise ReplicaMismatch(
                f"{name}: {what} dataset {wanted} but the chain's Seed is {seed_id}; "
                "the node or gateway serves another dataset"
            )


def describe_chain(chain: Sequence[ChainEntry]) -> tuple[str | None, str | None]:
    """Title (from the latest ``SetInfo``) and license (latest ``SetLicense``) of a chain."""
    title: str | None = None
    license_text: str | None = None
    for entry in chain:  # head first: the first one met is the latest
        event = entry.block.event
        if title is None and isinstance(event, SetInfo):
            title = derive_title(event.description) or ""
        if license_text is None and isinstance(event, SetLicense):
            license_text = license_label(event.spdx_id or event.short_name, event.name) or ""
    return title or None, license_text or None


def license_label(spdx_id: str | None, name: str | None) -> str | None:
    """The one form a license is shown in (docs/concepts.md, "Words"): its SPDX id, with
    its name where known and different: ``CC0-1.0 (Creative Commons Zero v1.0 Universal)``."""
    if spdx_id and name and name != spdx_id:
        return f"{spdx_id} ({name})"
    return spdx_id or name or None


_SPDX_URL = "https://spdx.org/licenses/"


def _spdx_of(url: object) -> str | None:
    """``CC0-1.0`` of ``https://spdx.org/licenses/CC0-1.0.html`` (the descriptor's form)."""
    if isinstance(url, str) and url.startswith(_SPDX_URL) and url.endswith(".html"):
        return url[len(_SPDX_URL) : -len(".html")] or None
    return None


def descriptor_facts(doc: Mapping[str, Any], dataset_id: str) -> tuple[str | None, str | None]:
    """Title and license (``rights``, else ``license``) of a descriptor about ``dataset_id``.

    A descriptor about another dataset says nothing here: (None, None).
    """
    try:
        if DatasetId.parse(str(doc.get("id", ""))) != DatasetId.parse(dataset_id):
            return None, None
    except ValueError:
        return None, None
    title = doc.get("title")
    rights = doc.get("rights")
    name = str(rights) if isinstance(rights, str) and rights else None
    license_url = doc.get("license")
    spdx = _spdx_of(license_url)
    if spdx is None and name is None and isinstance(license_url, str) and license_url:
        name = license_url
    return (
        str(title) if isinstance(title, str) and title else None,
        license_label(spdx, name),
    )


def resolve_dataset(
    ref: str,
    replica: Replica,
    claims: NameClaims,
    *,
    expect_dataset_id: str | None = None,
    encrypted: bool = False,
) -> ResolvedDataset:
    """Read the replica's head, walk its chain to the Seed, check the claims.

    Args:
        ref: the name asked for.
        replica: the replica the name leads to (already decrypted if it was encrypted).
        claims: what the name's record says.
        expect_dataset_id: the dataset ID asked for (a ``did:odf`` lookup).
        encrypted: ``replica`` is a decrypted view of an encrypted publish (reported).

    Raises:
        ReplicaMismatch: the claims and the data disagree.
        HashMismatch / FormatError / ChainBroken / NotFound: the replica serves a bad chain.
    """
    head = replica.head()
    chain = list(walk_chain(replica.read_block, head))
    seed_id = seed_dataset_id(chain)
    check_claims(replica.name, claims, head, seed_id, expect_dataset_id=expect_dataset_id)
    title, license_text = describe_chain(chain)
    notes = list(claims.notes)
    if claims.descriptor is not None:
        d_title, d_license = descriptor_facts(claims.descriptor, seed_id)
        if d_title is None and d_license is None:
            notes.append("the descriptor describes another dataset; ignored")
        title = d_title or title
        # The verified chain's SetLicense first: the descriptor only claims.
        license_text = license_text or d_license
    return ResolvedDataset(
        ref=ref,
        dataset_id=seed_id,
        head=head,
        locator=claims.locator,
        blocks=len(chain),
        sequence=claims.sequence,
        expires_at=claims.expires_at,
        title=title,
        license=license_text,
        notes=tuple(notes),
        encrypted=encrypted,
    )


def resolve_sealed(
    ref: str,
    claims: NameClaims,
    *,
    envelope_dataset_id: str | None,
    reason: str,
    expect_dataset_id: str | None = None,
) -> ResolvedDataset:
    """An encrypted dataset read without keys: the claims, checked as far as they can be.

    Nothing of the chain is read (its blocks are ciphertext). What is checked: the key
    envelope (verified against its CID / id by the adapter) is for the dataset the record
    claims, and both are the dataset asked for. Head, sequence and expiry are reported as
    the signed record states them.

    Args:
        ref: the name asked for.
        claims: what the name's record says (head and dataset ID, if it has a record).
        envelope_dataset_id: the dataset ID the published key envelope names.
        reason: why the content could not be decrypted (one line, no key material).
        expect_dataset_id: the dataset ID asked for (a ``did:odf`` lookup).

    Raises:
        ReplicaMismatch: the envelope, the record and the ID asked for disagree.
        ResolutionError: neither a record nor an envelope names the dataset.
    """
    dataset_id = claims.dataset_id or envelope_dataset_id
    if dataset_id is None:
        raise ResolutionError(
            f"{ref}: encrypted, and neither a signed record nor a key envelope names the "
            "dataset; pass its key envelope with --key-envelope"
        )
    for what, wanted in (
        ("the key envelope is for", envelope_dataset_id),
        ("asked for", expect_dataset_id),
    ):
        if wanted is not None and DatasetId.parse(wanted) != DatasetId.parse(dataset_id):
            raise ReplicaMismatch(
                f"{ref}: {what} dataset {wanted} but the record says {dataset_id}; "
                "the name or envelope belongs to another dataset"
            )
    source = "the signed record's" if claims.dataset_id is not None else "the key envelope's"
    note = (
        f"encrypted and not decrypted ({reason}): head and dataset ID are {source} claims; "
        "the chain was not walked"
    )
    return ResolvedDataset(
        ref=ref,
        dataset_id=dataset_id,
        head=claims.head,
        locator=claims.locator,
        blocks=None,
        sequence=claims.sequence,
        expires_at=claims.expires_at,
        notes=(*claims.notes, note),
        encrypted=True,
        content_checked=False,
    )
