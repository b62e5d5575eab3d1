"""Gateway requests for a publisher with no saved state (a second machine) to rebuild its view.

Usage::

    python bench/bench_arweave_rebuild.py [--sizes 300] [--before-root DIR]
                                          [--scratch /tmp/odfweb3-bench-arweave-rebuild]

For each n: a chain of a full upload and n one-block updates (tiered records, made as the
publisher makes them: ``tests/support/ar_chains.py``) is posted to a fresh loopback arlocal,
then ``GatewayTarget.inspect`` of that dataset with the chain's wallet and an empty state
directory runs through a counting proxy (``tests/support/lying_proxy.py``): the GraphQL
search, the records (each verified), the lookups of the data items the records name.
Printed: requests and seconds. ``--before-root DIR`` runs the same with another checkout's
``odfweb3`` and ``odfweb3_arweave`` first (e.g. the commit before the tiered rebuild), in a
subprocess, as the reference of the ratio; the request counts are exact, the seconds
indicative (a shared machine).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType

from _before_after import measure_before, parse_args, use_code_root

HERE = Path(__file__).resolve().parent


def _support(name: str) -> ModuleType:
    """This tree's ``tests/support/<name>.py`` (the chain builder, the proxy, arlocal),
    loaded by path so that it runs on the checkout's library."""
    spec = importlib.util.spec_from_file_location(
        f"bench_support_{name}", HERE.parent / "tests" / "support" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


use_code_root()

from _common import machine, print_table  # noqa: E402

from odfweb3.odf.multihash import hash_bytes  # noqa: E402
from odfweb3.publish.state import StateStore  # noqa: E402
from odfweb3_arweave.client.gateway import ArweaveGateway  # noqa: E402
from odfweb3_arweave.publish.gateway_target import GatewayTarget  # noqa: E402
from odfweb3_arweave.wallet import generate_wallet  # noqa: E402

_chains, _proxy, _nodes = (_support(n) for n in ("ar_chains", "lying_proxy", "nodes"))
build_chain, post_chain = _chains.build_chain, _chains.post_chain
lying_proxy, start_arlocal = _proxy.lying_proxy, _nodes.start_arlocal


def measure(sizes: list[int], scratch: Path, label: str) -> list[list[str]]:
    rows = []
    for n in sizes:
        wallet = generate_wallet()
        chain = build_chain(n, tiered=True, seed=f"bench-rebuild-{time.time_ns()}", wallet=wallet)
        work = scratch / f"{label}-{n}"
        with start_arlocal(work / "arlocal") as arlocal:
            post_chain(ArweaveGateway(arlocal.url), chain, arlocal)
            with lying_proxy(arlocal.url) as proxy:
                target = GatewayTarget(ArweaveGateway(proxy.url), wallet, StateStore(work / "s"))
                t0 = time.perf_counter()
                view = target.inspect(chain.dataset_id, hash_bytes(b"a head it never saw"))
                seconds = time.perf_counter() - t0
                asked = len(proxy.requests)
        assert view.state is not None and view.state.extra.get("rebuilt") is True
        rows.append([str(n), label, str(asked), f"{seconds:.2f}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    scratch = Path("/tmp/odfweb3-bench-arweave-rebuild")
    args = parse_args(__doc__, argv, sizes="300", scratch=scratch)
    if args.json:  # the --before-root subprocess
        print(json.dumps(measure(args.size_list, args.scratch, args.label)))
        return 0
    print(machine())
    rows: list[tuple[str, ...]] = [("updates", "code", "requests", "seconds", "ratio")]
    before: dict[str, int] = {}
    if args.before_root is not None:
        for row in measure_before(__file__, args):
            before[row[0]] = int(row[2])
            rows.append((*row, "1"))
    for row in measure(args.size_list, args.scratch, "after"):
        ref = before.get(row[0])
        rows.append((*row, f"{ref / int(row[2]):.0f}x fewer" if ref else "-"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
