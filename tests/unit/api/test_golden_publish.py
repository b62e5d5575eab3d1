"""Fixed-seed bytes: a seeded example dataset published to car: gives the same root and the
same root CAR, byte for byte, whatever the code around the pipeline becomes (the move of
publish into the library kept them; docs/api.md)."""

import hashlib

from odfweb3 import api
from odfweb3.odf.builder import create_root_dataset

# create_root_dataset(seed=1, blocks=3), published with the defaults (CIDv1, 256 KiB
# chunks, 174 links). The descriptor's CAR is not pinned: it names this keystore's key.
ROOT = "bafybeifgr6ke6nnb5p23y7xvt4sboapqyyb6gw5bdt26wsjhasu3lg47ve"
ROOT_CAR_SHA256 = "4245ec7c05e3585d2974d1b74eb22429ec77960897af719a86029e82408e0995"
DATASET_ID = "did:odf:fed01975211650ff19e7709bf19f0cebc15744155e505b478785a3ea60524a6dddf8e"


def test_a_seeded_dataset_publishes_to_the_same_root_and_car(tmp_path):
    create_root_dataset(tmp_path / "ds", blocks=3, seed=1)
    outcome = api.publish(
        tmp_path / "ds", f"car:{tmp_path}/out", config=api.Config(home=tmp_path / "home")
    )
    assert outcome.plan.dataset_id == DATASET_ID
    assert outcome.upload is not None and outcome.upload.locator == ROOT
    car = (tmp_path / "out" / f"{ROOT}.car").read_bytes()
    assert hashlib.sha256(car).hexdigest() == ROOT_CAR_SHA256
