"""``odfweb3`` with its randomness and clock fixed, so two checkouts' bundles compare byte
for byte.

Usage::

    PYTHONPATH=CHECKOUT:CHECKOUT/adapters python bench/bundle_fixed.py publish DS --to bundle:OUT -q

An Arweave bundle differs between two runs of the same code in three places: the RSA-PSS
salt of every signature (32 random bytes, so every id differs), the ArFS drive, folder and
file ids (``uuid.uuid4``) and the ``Unix-Time`` tags (the clock). This wrapper signs with a
salt of length 0 (PSS is then deterministic; readers accept any salt length), draws UUIDs
from a seeded generator and fixes the clock, then runs the CLI of whichever checkout is first
on ``sys.path``: the bundle and the file index pack of a commit and of the one before can be
compared by SHA-256 (a memory or speed change must not change them). For benchmarks only:
never publish a bundle made this way.
"""

from __future__ import annotations

import random
import sys
import uuid
from datetime import UTC, datetime

_rng = random.Random(0)


def _uuid4() -> uuid.UUID:
    return uuid.UUID(int=_rng.getrandbits(128), version=4)


# Before odfweb3 is imported: BundleTarget's default ``new_id`` is bound at its definition.
uuid.uuid4 = _uuid4


def main() -> int:
    from odfweb3.cli.main import main as cli_main
    from odfweb3_arweave.publish import bundle_target
    from odfweb3_arweave.wallet import Wallet

    sign = Wallet.sign

    def fixed_sign(self: Wallet, message: bytes, salt_length: int = 0) -> bytes:
        return sign(self, message, 0)

    Wallet.sign = fixed_sign  # type: ignore[method-assign]
    init = bundle_target.BundleTarget.__init__
    when = datetime(2026, 12, 8, tzinfo=UTC)

    def fixed_init(self: bundle_target.BundleTarget, *args: object, **kw: object) -> None:
        kw["clock"] = lambda: when
        kw["new_id"] = _uuid4
        init(self, *args, **kw)  # type: ignore[arg-type]

    bundle_target.BundleTarget.__init__ = fixed_init  # type: ignore[method-assign]
    return int(cli_main(sys.argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
