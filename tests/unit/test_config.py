import pytest

from odfweb3.config import load_config
from odfweb3.errors import ConfigError


def test_defaults_without_file(tmp_path):
    c = load_config(cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert c.source is None
    assert c.ipfs_api == "http://127.0.0.1:5001"
    assert c.keystore_dir == tmp_path / ".local/share/odfweb3/keys"


def test_file_in_cwd_then_env_overrides(tmp_path):
    (tmp_path / "odfweb3.yaml").write_text(
        "ipfs:\n  api: http://10.0.0.1:5001\narweave:\n  gateway: http://127.0.0.1:1984\n"
    )
    c = load_config(cwd=tmp_path, env={"ODFWEB3_IPFS_API": "http://127.0.0.1:9999"})
    assert c.source == tmp_path / "odfweb3.yaml"
    assert c.ipfs_api == "http://127.0.0.1:9999"
    assert c.arweave_gateway == "http://127.0.0.1:1984"


def test_xdg_config_dir(tmp_path):
    d = tmp_path / "xdg" / "odfweb3"
    d.mkdir(parents=True)
    (d / "odfweb3.yaml").write_text("state_dir: /tmp/st\n")
    c = load_config(cwd=tmp_path, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert str(c.state_dir) == "/tmp/st"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("ipfs: [1, 2\n", "invalid YAML at line"),
        ("- a\n- b\n", "mapping"),
        ("ipfs:\n  apii: http://x\n", "unknown key"),
        ("ipfs:\n  cid_version: 3\n", "ipfs.cid_version"),
        ("publisher:\n  mbox: x@y\n", "'name' is a required property"),
    ],
)
def test_malformed_config(tmp_path, text, needle):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as ei:
        load_config(cfg, cwd=tmp_path)
    assert str(cfg) in str(ei.value) and needle in str(ei.value)


def test_explicit_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml", cwd=tmp_path)


def test_bad_env_value_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"ipfs\.api"):
        load_config(cwd=tmp_path, env={"ODFWEB3_IPFS_API": "ftp://x"})


def test_network_budgets_default_and_from_the_file(tmp_path):
    from odfweb3.transport.settings import NetworkSettings

    assert load_config(cwd=tmp_path).network == NetworkSettings()
    assert NetworkSettings().deadline_s == 120 and NetworkSettings().timeout_s == 30
    (tmp_path / "odfweb3.yaml").write_text(
        "network:\n  deadline_s: 600\n  timeout_s: 5\n  min_rate_kib_s: 16\n  retries: 0\n"
    )
    net = load_config(cwd=tmp_path).network
    assert (net.deadline_s, net.timeout_s, net.min_rate, net.retries) == (600, 5, 16 * 1024, 0)


@pytest.mark.parametrize(
    "text", ["network:\n  deadline_s: 0\n", "network:\n  retries: -1\n", "network:\n  ttl: 3\n"]
)
def test_bad_network_budgets_are_config_errors(tmp_path, text):
    (tmp_path / "odfweb3.yaml").write_text(text)
    with pytest.raises(ConfigError, match="network"):
        load_config(cwd=tmp_path)


def test_no_settings_are_valid_without_loading_jsonschema(tmp_path):
    # The shortcut in validate_config is only right while the schema requires no key.
    import jsonschema

    from odfweb3.config import _schema

    assert jsonschema.Draft202012Validator(_schema()).is_valid({})
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from odfweb3.config import load_config; "
        f"load_config(cwd=Path({str(tmp_path)!r}), env={{'HOME': {str(tmp_path)!r}}}); "
        "print('jsonschema' in sys.modules, 'yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    # A setting is still checked against the schema.
    from odfweb3.config import validate_config

    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        validate_config({"nope": 1}, "x")
