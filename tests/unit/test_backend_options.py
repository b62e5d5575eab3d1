"""Each backend's own options type: its CLI options set its fields, the configuration fills
the defaults, and only that backend reads them, typed (docs/design.md, "Backends")."""

import dataclasses
import json
from pathlib import Path

import pytest

from odfweb3.api.publishing import PublishOptions
from odfweb3.backends import (
    TargetOptions,
    backend_options,
    declarations,
    open_target,
    own_options,
    parse_options,
)
from odfweb3.cli.main import build_parser
from odfweb3.config import load_config
from odfweb3.errors import UsageError
from odfweb3_arweave.declaration import ArweaveOptions
from odfweb3_ipfs.declaration import IpfsOptions


def test_every_cli_option_sets_a_field_of_its_backends_options_and_none_of_the_library() -> None:
    library = {f.name for f in dataclasses.fields(PublishOptions)}
    for declared in declarations():
        own = {f.name for f in dataclasses.fields(declared.options_type)}
        dests = {o.dest for o in declared.publish_options}
        assert dests == own, declared.name  # no option without a field, no field without one
        assert not own & library, declared.name  # the library's options are not flat
        declared.options_type()  # every field has a default


def test_the_command_line_builds_each_backends_options_typed(tmp_path: Path) -> None:
    parsed = build_parser().parse_args(
        ["publish", "ds", "--to", "car:out", "--cid-version", "0", "--max-cost", "0.5AR"]
    )
    assert parse_options(vars(parsed)) == (
        IpfsOptions(cid_version=0),
        ArweaveOptions(max_cost=5 * 10**11),
    )
    # Without flags: the defaults, which the library takes when a backend's are not given.
    bare = build_parser().parse_args(["publish", "ds", "--to", "car:out"])
    assert parse_options(vars(bare)) == (IpfsOptions(), ArweaveOptions())


def test_the_configuration_fills_what_no_flag_gave(tmp_path: Path) -> None:
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps({"ipfs": {"cid_profile": "unixfs-v0-2015"}}))
    config = load_config(cfg, env={"ODFWEB3_ARWEAVE_WALLET": str(tmp_path / "w.json")})
    ipfs, arweave = backend_options((), config)
    assert ipfs == IpfsOptions(cid_version=0, cid_profile="unixfs-v0-2015")
    assert arweave == ArweaveOptions(wallet=tmp_path / "w.json")
    # A flag wins over the configuration.
    given = (ArweaveOptions(wallet=tmp_path / "mine.json", max_cost=7),)
    assert backend_options(given, config)[1] == ArweaveOptions(tmp_path / "mine.json", 7)


def test_a_contradictory_profile_is_refused_whatever_the_target() -> None:
    with pytest.raises(UsageError, match="unixfs-v1-2025"):
        backend_options(
            (IpfsOptions(cid_profile="unixfs-v1-2025", cid_version=0),), load_config(None, env={})
        )


def test_options_of_no_backend_or_given_twice_are_refused() -> None:
    config = load_config(None, env={})
    with pytest.raises(UsageError, match="dict is no backend's"):
        backend_options(({"cid_version": 0},), config)
    with pytest.raises(UsageError, match="IpfsOptions given twice"):
        backend_options((IpfsOptions(), IpfsOptions(cid_version=0)), config)


def test_a_target_gets_its_own_backends_options_and_refuses_another_backends(
    tmp_path: Path,
) -> None:
    config = load_config(None, env={"ODFWEB3_STATE_DIR": str(tmp_path / "state")})
    completed = backend_options((IpfsOptions(cid_version=0), ArweaveOptions(max_cost=3)), config)
    assert own_options("car:out", completed) == IpfsOptions(0, "unixfs-v0-2015")
    assert own_options("bundle:out", completed) == ArweaveOptions(max_cost=3)
    with pytest.raises(UsageError, match="unknown target") as unknown:
        own_options("nowhere:out", completed)
    # The forms come from the backends' declarations: every scheme they publish to is named.
    for form in ("car:DIR", "ipfs", "pinning:NAME", "bundle:DIR", "arweave", "turbo:URL"):
        assert form in str(unknown.value), form
    with pytest.raises(UsageError, match="no ArweaveOptions among"):
        own_options("arweave", completed[:1])
    # Another backend's options are an error, not its defaults in their place.
    with pytest.raises(UsageError, match="takes IpfsOptions, not ArweaveOptions"):
        open_target(f"car:{tmp_path / 'out'}", config, TargetOptions(own=ArweaveOptions()))
    # No options at all: the backend's defaults, completed from the configuration.
    target = open_target(f"car:{tmp_path / 'out'}", config)
    assert target.name == f"car:{tmp_path / 'out'}"
