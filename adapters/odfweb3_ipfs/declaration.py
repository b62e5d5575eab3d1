"""What the IPFS backend is, for the registry and the command line, without its network code.

Imported on every start (the ``publish`` options are part of ``--help``), so it imports only
the core's registry types; the backend itself (:mod:`odfweb3_ipfs.backend`, with httpx, the
formats and the targets) is imported when a ``car:``/``ipfs``/``pinning:`` target or a
``car:``/``ipfs://``/``ipns://`` reference is first used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from odfweb3.backends import CliOption, Declaration, TargetTraits

if TYPE_CHECKING:
    from odfweb3.config import Config

__all__ = ["CID_PROFILE_NAMES", "DECLARATION", "IpfsOptions"]

# Kubo's UnixFS import profiles (odfweb3_ipfs.publish.cid_profile.PROFILES; a test checks).
CID_PROFILE_NAMES: Final = ("unixfs-v0-2015", "legacy-cid-v0", "unixfs-v1-2025")


@dataclass(frozen=True)
class IpfsOptions:
    """The IPFS targets' own publish options (``--cid-version``, ``--cid-profile``,
    ``--unpin-previous``).

    Attributes:
        cid_version: the CID version; None: config ``ipfs.cid_version``, else the profile's
            (or 1).
        cid_profile: a Kubo UnixFS import profile name (:mod:`.publish.cid_profile`); None:
            config ``ipfs.cid_profile``.
        unpin_previous: the node target unpins the previous root once the name moved.
    """

    cid_version: int | None = None
    cid_profile: str | None = None
    unpin_previous: bool = False


def _opened_name(spec: str, config: Config) -> str:
    """``ipfs`` is the node of ``ipfs.api``; every other name is its own."""
    if spec == "ipfs":
        return f"ipfs:{str(config.ipfs_api).rstrip('/')}"
    return spec.rstrip("/")


def _complete_options(options: IpfsOptions, config: Config) -> IpfsOptions:
    """Config ``ipfs.cid_version`` and ``ipfs.cid_profile`` where no flag was given, then the
    CID version and profile name the profile implies (refused if contradictory)."""
    from odfweb3_ipfs.publish.cid_profile import profile_for

    version = options.cid_version
    if version is None:
        configured = config.get("ipfs", "cid_version")
        version = None if configured is None else int(configured)
    profile = profile_for(options.cid_profile or config.get("ipfs", "cid_profile"), version)
    return replace(options, cid_version=profile.cid_version, cid_profile=profile.name)


DECLARATION: Final = Declaration(
    name="ipfs",
    rank=0,  # a did:odf is looked up as its IPNS name first
    target_schemes=("car", "ipfs", "pinning"),
    ref_prefixes=("car:", "ipfs://", "ipns://"),
    backend="odfweb3_ipfs.backend:IpfsBackend",
    target_forms=("car:DIR", "ipfs", "ipfs:URL", "pinning:NAME"),
    # car:DIR is a local directory; several pinning services are one node upload.
    traits={"car": TargetTraits(offline=True), "pinning": TargetTraits(combines=True)},
    opened_name=_opened_name,
    options_type=IpfsOptions,
    complete_options=_complete_options,
    publish_options=(
        CliOption(
            ("--cid-version",),
            {
                "type": int,
                "choices": (0, 1),
                "default": None,
                "help": "IPFS CID version (default 1)",
            },
            order=40,
        ),
        CliOption(
            ("--cid-profile",),
            {
                "choices": CID_PROFILE_NAMES,
                "default": None,
                "metavar": "NAME",
                "help": "ipfs/car: Kubo's UnixFS import profile, so `ipfs add -r` under the "
                "same profile gives the same CIDs: unixfs-v1-2025 (CIDv1, raw leaves, 1 MiB "
                "chunks, 1024 links) or unixfs-v0-2015 (= --cid-version 0); default: config "
                "ipfs.cid_profile, else CIDv1 with Kubo's default 256 KiB chunks and 174 links",
            },
            order=50,
        ),
        CliOption(
            ("--unpin-previous",),
            {
                "action": "store_true",
                "help": "ipfs: unpin the previous root once the name moved (shared blocks "
                "stay pinned)",
            },
            order=90,
        ),
    ),
)
