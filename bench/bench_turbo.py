"""Per-publish overhead of ``--to turbo`` against ``--to arweave`` (the L1 path), same run.

Starts the real Turbo bundler (tests/support/turbo.py; ``make turbonode``) with its arlocal,
then, per round, publishes a fresh dataset (first publish) and a one-block update through each
target and times each publish until it returns (what the user waits for; not the bundler's
later bundling). The L1 path posts one transaction to the same arlocal. Prints seconds, HTTP
requests to the bundler and the ratio turbo / L1. Run from the repository root::

    .venv/bin/python bench/bench_turbo.py [--blocks 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--data-bytes", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from odfweb3.odf.builder import append_blocks, create_root_dataset
    from odfweb3.publish.execute import publish_dataset
    from odfweb3.publish.state import StateStore
    from odfweb3_arweave.client.gateway import ArweaveGateway
    from odfweb3_arweave.client.turbo import TurboClient
    from odfweb3_arweave.publish.gateway_target import GatewayTarget
    from odfweb3_arweave.publish.turbo_target import TurboTarget
    from odfweb3_arweave.wallet import Wallet, generate_wallet
    from tests.support.turbo import start_turbo

    times: dict[tuple[str, str], list[float]] = {}
    items: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="odfweb3-bench-turbo-") as tmp:
        work = Path(tmp)
        with start_turbo(work / "turbo") as turbo:
            # One wallet and one dataset per target and round: no upload of one is seen by
            # another's publish.
            for r in range(args.rounds):
                for n, kind in enumerate(("l1", "turbo")):
                    wallet = generate_wallet()
                    turbo.arlocal.mint(wallet.address, 10**15)
                    ds = create_root_dataset(
                        work / f"ds-{kind}-{r}",
                        blocks=args.blocks,
                        data_bytes=args.data_bytes,
                        seed=900 + 2 * r + n,
                    ).path
                    state = StateStore(work / f"state-{kind}-{r}")

                    def target(
                        kind: str = kind, state: StateStore = state, wallet: Wallet = wallet
                    ) -> GatewayTarget:
                        gateway = ArweaveGateway(turbo.arlocal.url)
                        if kind == "l1":
                            return GatewayTarget(gateway, wallet, state)
                        return TurboTarget(gateway, TurboClient(turbo.url), wallet, state)

                    for phase in ("first", "update"):
                        if phase == "update":
                            append_blocks(ds, 1, data_bytes=20_000, seed=950 + r)
                        t = target()
                        start = time.perf_counter()
                        out = publish_dataset(ds, t)
                        times.setdefault((kind, phase), []).append(time.perf_counter() - start)
                        if kind == "turbo":
                            items[phase] = len(out.state.extra.get("receipts") or {})
    print(f"{args.blocks} blocks of {args.data_bytes} bytes in all; {args.rounds} rounds")
    print("| publish | L1 (s, median) | turbo (s, median) | turbo / L1 | items sent to turbo |")
    print("|---|---|---|---|---|")
    for phase in ("first", "update"):
        l1 = statistics.median(times[("l1", phase)])
        tb = statistics.median(times[("turbo", phase)])
        print(f"| {phase} | {l1:.2f} | {tb:.2f} | {tb / l1:.2f} | {items.get(phase, 0)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
