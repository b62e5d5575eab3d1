"""Configuration: ``odfweb3.yaml`` plus ``ODFWEB3_*`` environment variables.

Where the file is found, first match wins:

1. ``--config FILE`` (must exist);
2. ``./odfweb3.yaml`` in the working directory;
3. ``$XDG_CONFIG_HOME/odfweb3/odfweb3.yaml`` (``~/.config/odfweb3/odfweb3.yaml``).

The file is validated against ``schemas/config.schema.json``; an error names the
file, the key and what is expected (an unknown key: the keys known at that level).
Then environment variables override it:

=============================  ======================
``ODFWEB3_IPFS_API``           ``ipfs.api``
``ODFWEB3_IPFS_GATEWAY``       ``ipfs.gateway``
``ODFWEB3_ARWEAVE_GATEWAY``    ``arweave.gateway``
``ODFWEB3_ARWEAVE_WALLET``     ``arweave.wallet``
``ODFWEB3_KEYSTORE``           ``keystore``
``ODFWEB3_STATE_DIR``          ``state_dir``
=============================  ======================

Only this module and the CLI read the environment, and only when asked
(:func:`load_config` takes the environment as an argument).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from odfweb3.errors import ConfigError
from odfweb3.transport.settings import CommandBudget, NetworkSettings

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "DEFAULT_ARWEAVE_GATEWAY",
    "DEFAULT_IPFS_API",
    "DEFAULT_IPFS_GATEWAY",
    "ENV_KEYS",
    "Config",
    "Setting",
    "find_config_file",
    "load_config",
]

DEFAULT_IPFS_API: Final = "http://127.0.0.1:5001"
DEFAULT_IPFS_GATEWAY: Final = "http://127.0.0.1:8080"
DEFAULT_ARWEAVE_GATEWAY: Final = "http://127.0.0.1:1984"
CONFIG_NAME: Final = "odfweb3.yaml"

ENV_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "ODFWEB3_IPFS_API": ("ipfs", "api"),
    "ODFWEB3_IPFS_GATEWAY": ("ipfs", "gateway"),
    "ODFWEB3_IPFS_ROUTING": ("ipfs", "routing"),
    "ODFWEB3_ARWEAVE_GATEWAY": ("arweave", "gateway"),
    "ODFWEB3_ARWEAVE_WALLET": ("arweave", "wallet"),
    "ODFWEB3_KEYSTORE": ("keystore",),
    "ODFWEB3_STATE_DIR": ("state_dir",),
}


# The defaults `odfweb3 config` shows for settings that are not set: the core's own
# fallbacks (the adapters document theirs in the schema's descriptions).
DEFAULTS: Final[Mapping[str, Any]] = {
    "ipfs.api": DEFAULT_IPFS_API,
    "ipfs.gateway": DEFAULT_IPFS_GATEWAY,
    "ipfs.record_ttl": 300,
    "arweave.gateway": DEFAULT_ARWEAVE_GATEWAY,
}


@dataclass(frozen=True)
class Setting:
    """One setting in effect: its dotted key, its value and where it comes from
    (``default``, the configuration file's path, or ``env ODFWEB3_…``)."""

    key: str
    value: Any
    source: str


@dataclass(frozen=True)
class Config:
    """The effective configuration.

    Attributes:
        data: the merged settings (file, then environment), schema-valid.
        source: the file it came from, or None.
        home: odfweb3's data directory (keystore and state live below it by default).
    """

    data: Mapping[str, Any] = field(default_factory=dict)
    source: Path | None = None
    home: Path = field(default_factory=lambda: Path.home() / ".local" / "share" / "odfweb3")
    origins: Mapping[str, str] = field(default_factory=dict)  # dotted key -> where it was set

    def settings(self) -> list[Setting]:
        """Every setting in effect and where it comes from (``odfweb3 config``): each value
        set in the file or the environment, then the defaults of the settings the core
        itself falls back on (:data:`DEFAULTS`). Sorted by key."""
        found: dict[str, Setting] = {}

        def walk(node: Any, prefix: str) -> None:
            if isinstance(node, Mapping) and (node or not prefix):
                for k, v in node.items():
                    walk(v, f"{prefix}.{k}" if prefix else str(k))
                return
            origin = self.origins.get(prefix)
            if origin is None:  # a map set as a whole: the nearest key that has one
                parts = prefix.split(".")
                while parts and origin is None:
                    parts.pop()
                    origin = self.origins.get(".".join(parts))
            found[prefix] = Setting(prefix, node, origin or "file")

        walk(self.data, "")
        defaults: dict[str, Any] = {
            **DEFAULTS,
            "keystore": str(self.home / "keys"),
            "state_dir": str(self.home / "state"),
        }
        for key, value in defaults.items():
            if key not in found:
                found[key] = Setting(key, value, "default")
        return [found[k] for k in sorted(found)]

    def get(self, *path: str, default: Any = None) -> Any:
        """The value at ``path`` (e.g. ``get("ipfs", "api")``) or ``default``."""
        node: Any = self.data
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return default
            node = node[key]
        return node

    @property
    def ipfs_api(self) -> str:
        """Kubo RPC API URL."""
        return str(self.get("ipfs", "api", default=DEFAULT_IPFS_API))

    @property
    def ipfs_gateway(self) -> str:
        """IPFS HTTP gateway URL."""
        return str(self.get("ipfs", "gateway", default=DEFAULT_IPFS_GATEWAY))

    @property
    def arweave_gateway(self) -> str:
        """Arweave gateway URL."""
        return str(self.get("arweave", "gateway", default=DEFAULT_ARWEAVE_GATEWAY))

    @property
    def arweave_wallet(self) -> Path | None:
        """Path of the JWK wallet, if configured."""
        w = self.get("arweave", "wallet")
        return Path(w).expanduser() if w else None

    @cached_property
    def command_budget(self) -> CommandBudget:
        """The network budget of the command this configuration serves
        (``network.command_deadline_s``), shared by every client made from :attr:`network`:
        one per Config, and a CLI command loads one Config."""
        return NetworkSettings.budget_from_config(self.get("network"))

    @property
    def network(self) -> NetworkSettings:
        """Budgets of the network clients (``network:``; docs/security.md)."""
        return NetworkSettings.from_config(self.get("network"), command=self.command_budget)

    @property
    def keystore_dir(self) -> Path:
        """Directory of odfweb3's keys."""
        k = self.get("keystore")
        return Path(k).expanduser() if k else self.home / "keys"

    @property
    def state_dir(self) -> Path:
        """Directory of publish state."""
        s = self.get("state_dir")
        return Path(s).expanduser() if s else self.home / "state"

    def dataset_key_path(self, key: str, cwd: Path) -> Path | None:
        """The dataset directory a ``datasets:`` key names as a path: resolved relative
        to the configuration file's directory (the working directory when the settings
        come from the environment only); None for a ``did:odf`` key."""
        if key.startswith("did:odf:"):
            return None
        base = self.source.parent if self.source is not None else cwd
        return (base / Path(key).expanduser()).resolve()

    def dataset_settings_for(
        self, directory: Path | None, dataset_id: str, *, cwd: Path, names: Sequence[str] = ()
    ) -> Mapping[str, Any]:
        """The ``datasets:`` settings of one dataset: every key that matches it, by
        resolved path (:meth:`dataset_key_path`), by ``did:odf`` or by one of its
        ``names`` (a kamu workspace name). Several matching keys are merged;
        ``sensitive`` is true if any of them says so (the safe side). ``names``: kamu's
        names for it (``account/name``, ``name``), when it is a dataset of a workspace."""
        table = self.get("datasets", default={}) or {}
        where = directory.resolve() if directory is not None else None
        merged: dict[str, Any] = {}
        for key, settings in table.items():
            path = self.dataset_key_path(key, cwd)
            if key == dataset_id or key in names or (path is not None and path == where):
                for k, v in dict(settings).items():
                    merged[k] = (merged.get(k) is True) or v if k == "sensitive" else v
        return merged


@cache
def _schema() -> dict[str, Any]:
    from importlib import resources  # only when there are settings to check

    text = resources.files("odfweb3.schemas").joinpath("config.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def find_config_file(explicit: str | Path | None, cwd: Path, env: Mapping[str, str]) -> Path | None:
    """Locate the config file (see the module docstring for the order)."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found (given with --config)")
        return path
    local = cwd / CONFIG_NAME
    if local.is_file():
        return local
    xdg = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    user = Path(xdg) / "odfweb3" / CONFIG_NAME
    return user if user.is_file() else None


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def validate_config(data: Any, source: str) -> None:
    """Validate settings against the JSON Schema; raise ConfigError naming file and key.

    No settings at all (no file, no ``ODFWEB3_*`` variable) are valid (the schema requires
    no key), so jsonschema is then not even imported: it is most of a publish's start-up
    (``bench/bench_startup.py``)."""
    if isinstance(data, Mapping) and not data:
        return
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        expected = e.message
        if e.validator == "additionalProperties" and isinstance(e.schema, dict):
            props = e.schema.get("properties", {})
            extra = sorted(k for k in e.instance if k not in props)
            unknown = ", ".join(repr(k) for k in extra) or e.message
            known = ", ".join(sorted(props))
            expected = f"unknown key {unknown}; the keys here are {known} (docs/operations.md)"
        raise ConfigError(f"{source}: {_key_path(e)}: {expected}")


def load_config(
    explicit: str | Path | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Read, validate and merge the configuration.

    Args:
        explicit: ``--config`` value, if any.
        cwd: working directory to look in (default: the process's).
        env: environment to read ``ODFWEB3_*``, ``XDG_*`` and ``HOME`` from (default: empty,
            so library callers are never surprised by the environment; the CLI passes
            ``os.environ``).
    """
    env = env or {}
    cwd = cwd or Path.cwd()
    path = find_config_file(explicit, cwd, env)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from None
        except UnicodeDecodeError as exc:  # found by tools/fuzz.py
            raise ConfigError(
                f"{path}: not UTF-8 text (byte {exc.start}); save the config file as UTF-8"
            ) from None
        import yaml

        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "not valid YAML"
            raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level")
        validate_config(loaded, str(path))
        data = loaded
    origins: dict[str, str] = {}
    if path is not None:
        where = f"{path} (--config)" if explicit is not None else str(path)
        _note_origins(data, "", where, origins)
    for var, keys in ENV_KEYS.items():
        value = env.get(var)
        if value:
            node = data
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = value
            origins[".".join(keys)] = f"env {var}"
    validate_config(data, "environment (ODFWEB3_*)" if path is None else f"{path} + environment")
    home_env = env.get("XDG_DATA_HOME")
    home = (
        Path(home_env) / "odfweb3"
        if home_env
        else Path(env.get("HOME", str(Path.home()))) / ".local" / "share" / "odfweb3"
    )
    return Config(data=data, source=path, home=home, origins=origins)


def _note_origins(node: Any, prefix: str, where: str, origins: dict[str, str]) -> None:
    """Record ``where`` as the origin of every key under ``node`` (a map too)."""
    if prefix:
        origins[prefix] = where
    if isinstance(node, Mapping):
        for k, v in node.items():
            _note_origins(v, f"{prefix}.{k}" if prefix else str(k), where, origins)
