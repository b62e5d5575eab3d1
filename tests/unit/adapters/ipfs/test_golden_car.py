"""Fixed-seed ``car:`` publishes give the same root CIDs and CAR bytes as before the DAG and
HAMT builders were merged: a first publish and two updates (the first builds every
directory, the updates build from the object index), flat and sharded top directories.

The DAG CAR (``<root>.car``) depends on the dataset alone; the descriptor and record CARs
carry the signing key's name (a fresh key per test) and are not pinned here.
"""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.execute import publish_dataset
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.cid_profile import DEFAULT_PROFILE
from odfweb3_ipfs.publish.dataset_dag import build_dataset_dag, reusable_links, reusable_shards
from odfweb3_ipfs.publish.state import CAR_CODEC

FLAT = [
    ("bafybeidu5kde34vudurwb4cti6tybgtxuzmgp4ogfi5xldjg7lhcfbxoxu", 18935,
     "b04d9f1f24c6fcfc806985f2c3313b83770f3cc52b386a06d4232de85b855cfd"),
    ("bafybeicwmj3vk4puy4yizztdis2mn3iippalodkiksie5mth5eg3rod2mq", 12731,
     "651282303b2b56ba7ec91d0fd3d409c11f39d31628886ef4ffc125bd0c93c5d1"),
    ("bafybeidb2zxtkiyhfentka4yw4ydzqdjcbuku55mtt6kolglj6rki365ye", 13758,
     "a95a1a347777d4758acd4ab6d340f5ae2031427f368ec8e232ecf5382e5ef581"),
]  # fmt: skip
SHARDED = [
    ("bafybeiaulzumfxh6mwmga57e4qus4mcnhuu45ckoi7mf6mnnqc2d5jpyfe", 204478,
     "506a077adfe314f095f7f9aee76382f2c4136b541c2c8f2cffdd9d006242786d"),
    ("bafybeicz5r2hlj2ncxd6ohbh5l74ouxrhdaefk5cdfxkonacbmkgraltzi", 27502,
     "b3a5b83f556ad590a49579deb0c1e63b32b277beb6b4306495726303cf79aeda"),
    ("bafybeigok36eq723bwucsdmd3c6f4g3bhfr7ek5csib3rquvrd6uc5clsa", 28839,
     "6e4e81dc566bf8ae82f5b49e8e37e8d6759c6cedf940715f715f814df01e7448"),
]  # fmt: skip


def _clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("sharded", "expected"), [(False, FLAT), (True, SHARDED)])
def test_seeded_car_publishes_are_byte_identical(
    tmp_path: Path, sharded: bool, expected: list[tuple[str, int, str]]
) -> None:
    profile = dataclasses.replace(DEFAULT_PROFILE, hamt_threshold=2000) if sharded else None
    ds = create_root_dataset(tmp_path / "ds", blocks=60 if sharded else 5, data_bytes=200, seed=11)
    keys = Keystore(tmp_path / "k")
    got = []
    prior = None
    for step in range(3):
        if step:
            append_blocks(ds.path, 3, data_bytes=300, seed=step)
        target = CarTarget(tmp_path / "out", keys, profile=profile, clock=_clock)
        done = publish_dataset(ds.path, target)
        car = (tmp_path / "out" / f"{done.upload.locator}.car").read_bytes()
        got.append((done.upload.locator, len(car), hashlib.sha256(car).hexdigest()))
        if sharded and step:
            # The full builder's update path (the node target's) from the same state
            # gives the same root as the index build car:DIR used.
            reader = DatasetReader.open(ds.path)
            objects = list(done.plan.objects)
            previous, dir_blocks = reusable_links(
                prior, {o.path for o in objects}, cid_version=1, encrypted=False, profile=profile
            )
            dag = build_dataset_dag(
                reader,
                done.plan.head,
                [o.path if o.path in previous else o for o in objects],
                previous,
                profile=profile,
                previous_dir_blocks=dir_blocks,
                previous_shards=reusable_shards(prior, previous),
            )
            assert dag.root.cid.encode() == done.upload.locator
        prior = CAR_CODEC.parse(done.state, "publish.json")
    assert got == expected
