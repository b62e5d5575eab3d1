"""CID profiles: names, defaults, state tags, the CLI flag and config key.

That each profile's CIDs equal Kubo's is checked on Kubo itself in
tests/integration/test_kubo_cid_profiles.py; the Kubo test vectors of both profiles are in
test_unixfs.py.
"""

import dataclasses
import json
from pathlib import Path

import pytest

from odfweb3.cli.main import main
from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import UsageError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import PublishState
from odfweb3_ipfs.declaration import CID_PROFILE_NAMES
from odfweb3_ipfs.formats.cid import Cid
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.cid_profile import (
    DEFAULT_PROFILE,
    PROFILES,
    UNIXFS_V0_2015,
    UNIXFS_V1_2025,
    profile_for,
)
from odfweb3_ipfs.publish.dataset_dag import reusable_links
from odfweb3_ipfs.publish.state import CAR_CODEC
from odfweb3_ipfs.publish.unixfs_import import Entry, import_tree

ROOT = Path(__file__).resolve().parents[4]


def test_profiles_are_kubos_parameters():
    # kubo v0.43.1 config/profile.go applyUnixFSv02015 / applyUnixFSv12025
    v0, v1 = PROFILES["unixfs-v0-2015"], PROFILES["unixfs-v1-2025"]
    assert (v0.cid_version, v0.raw_leaves, v0.chunk_size, v0.max_links) == (0, False, 262144, 174)
    assert (v0.hamt_fanout, v0.hamt_threshold, v0.estimation) == (256, 262144, "links")
    assert (v1.cid_version, v1.raw_leaves, v1.chunk_size, v1.max_links) == (1, True, 1 << 20, 1024)
    assert (v1.hamt_fanout, v1.hamt_threshold, v1.estimation) == (256, 262144, "block")
    assert PROFILES["legacy-cid-v0"] is v0  # Kubo's alias


def test_default_is_unchanged_cidv1_with_kubo_defaults():
    assert profile_for(None) is DEFAULT_PROFILE
    assert profile_for(None, 1) is DEFAULT_PROFILE
    d = DEFAULT_PROFILE
    assert (d.cid_version, d.raw_leaves, d.chunk_size, d.max_links, d.estimation) == (
        1,
        True,
        262144,
        174,
        "links",
    )
    assert profile_for(None, 0) is UNIXFS_V0_2015  # --cid-version 0 was already that profile


def test_unknown_or_contradicted_profile_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown CID profile 'unixfs-v2'"):
        profile_for("unixfs-v2")
    with pytest.raises(UsageError, match="makes CIDv1, not CIDv0"):
        profile_for("unixfs-v1-2025", 0)
    assert profile_for("unixfs-v1-2025", 1) is UNIXFS_V1_2025


def test_cli_choices_and_config_schema_name_every_profile():
    assert set(CID_PROFILE_NAMES) == set(PROFILES)
    schema = json.loads((ROOT / "schemas/config.schema.json").read_text())
    assert set(schema["properties"]["ipfs"]["properties"]["cid_profile"]["enum"]) == set(PROFILES)


def _state(**extra):
    return PublishState(
        dataset_id="did:odf:x",
        target="t",
        objects={"data/a": {"cid": "bafkqaaa", "tsize": 0, "size": 0}},
        extra={"dirBlocks": [], **extra},
    )


def test_objects_are_reused_only_under_the_same_profile():
    has = frozenset({"data/a"})

    def reused(state, profile):
        typed = CAR_CODEC.parse(state, "t")
        links, _ = reusable_links(
            typed, has, cid_version=profile.cid_version, encrypted=False, profile=profile
        )
        return bool(links)

    legacy_v1, legacy_v0 = _state(cidVersion=1), _state(cidVersion=0)  # before profiles
    tagged = _state(cidVersion=1, cidProfile="unixfs-v1-2025")
    assert reused(legacy_v1, DEFAULT_PROFILE)
    assert reused(legacy_v0, UNIXFS_V0_2015)
    assert not reused(legacy_v1, UNIXFS_V1_2025)
    assert reused(tagged, UNIXFS_V1_2025)
    assert not reused(tagged, DEFAULT_PROFILE)


def test_car_target_with_profile_matches_import_tree_and_records_the_profile(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=3 << 20, seed=7).path
    p = UNIXFS_V1_2025
    target = CarTarget(tmp_path / "out", Keystore(tmp_path / "keys"), profile=p)
    done = publish_dataset(ds, target)
    expected = p.import_tree(ds)
    assert done.upload.locator == expected.cid.encode()
    assert done.upload.locator != import_tree(ds).cid.encode()  # 3 MiB files: other chunking
    assert done.state.extra["cidProfile"] == "unixfs-v1-2025"

    # Incremental under the same profile: the earlier objects are reused, not re-read.
    append_blocks(ds, 1, data_bytes=5000, seed=1)
    again = publish_dataset(ds, CarTarget(tmp_path / "out", Keystore(tmp_path / "keys"), profile=p))
    assert (
        again.upload.locator
        == import_tree(
            ds,
            cid_version=1,
            chunk_size=p.chunk_size,
            max_links=p.max_links,
            estimation=p.estimation,
        ).cid.encode()
    )


def test_default_publish_records_no_profile(tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=1000, seed=7).path
    done = publish_dataset(ds, CarTarget(tmp_path / "out", Keystore(tmp_path / "keys")))
    assert "cidProfile" not in done.state.extra
    assert done.upload.locator == import_tree(ds).cid.encode()


def _run(capsys, tmp_path, *argv, config=None):
    env = {"HOME": str(tmp_path), "ODFWEB3_STATE_DIR": str(tmp_path / "state")}
    if config is not None:
        cfg = tmp_path / "odfweb3.yaml"
        cfg.write_text(config)
        argv = ("--config", str(cfg), *argv)
    code = main(list(argv), env=env)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_flag_and_config_key(capsys, tmp_path):
    ds = create_root_dataset(tmp_path / "ds", blocks=1, data_bytes=1000, seed=7).path
    want_v0 = import_tree(ds, cid_version=0).cid.encode()
    code, out, err = _run(
        capsys, tmp_path, "--json", "publish", str(ds), "--to", f"car:{tmp_path / 'a'}",
        "--cid-profile", "unixfs-v0-2015",
    )  # fmt: skip
    assert code == 0, err
    assert want_v0 in out and Cid.decode(want_v0).version == 0

    code, out, err = _run(
        capsys, tmp_path, "--json", "publish", str(ds), "--to", f"car:{tmp_path / 'b'}",
        config="ipfs:\n  cid_profile: legacy-cid-v0\n",
    )  # fmt: skip
    assert code == 0, err
    assert want_v0 in out

    code, _, err = _run(
        capsys, tmp_path, "publish", str(ds), "--to", f"car:{tmp_path / 'c'}",
        "--cid-profile", "unixfs-v1-2025", "--cid-version", "0",
    )  # fmt: skip
    assert code == 64
    assert err.count("\n") == 1 and "makes CIDv1, not CIDv0" in err and "Traceback" not in err


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, UNIXFS_V1_2025, UNIXFS_V0_2015])
def test_sharded_top_directories_are_built_once_as_build_directory_would(tmp_path, profile):
    # A top directory the profile shards goes straight to the HAMT builder that
    # records its table (no entry dict, no second pass); the root is import_tree's, whose
    # directories come from build_directory. A low threshold shards 120 blocks' folders.
    low = dataclasses.replace(profile, hamt_threshold=2000)
    ds = create_root_dataset(tmp_path / "ds", blocks=120, data_bytes=10, seed=3).path
    done = publish_dataset(ds, CarTarget(tmp_path / "out", Keystore(tmp_path / "k"), profile=low))
    expected = low.import_tree(ds)
    assert done.upload.locator == expected.cid.encode()
    assert {"blocks", "checkpoints"} <= set(done.state.extra["hamtShards"])
    # The estimate alone says what build_directory does, on both sides of the threshold.
    names = [f"f1620{i:064x}" for i in range(40)]
    cid = Cid.sha256(bytes(32), version=low.cid_version, codec=0x70)
    for n in range(1, 40):
        entries = {name: Entry(cid, 7) for name in names[:n]}
        links = [(name.encode(), cid.raw, 7) for name in names[:n]]
        assert low.directory_shards(links) == low.build_directory(entries, None).sharded
