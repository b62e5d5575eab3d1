"""Issue 19: the chain rules checked walking back (ChainRulesBackwards, constant memory) give
check_chain_rules' verdict on every chain, and FactsWalk gives facts_of_chain's facts.

Random chains (fixed seeds) mix valid and broken blocks of every rule: offsets (prevOffset,
interval start and end, a slice without interval), checkpoint carry, watermarks, system
times, sequence numbers, a second Seed, event kinds, empty events; with and without a
ChainState the blocks continue."""

from __future__ import annotations

import dataclasses
import random

import pytest

from odfweb3.odf.chain import ChainEntry, iter_objects
from odfweb3.odf.facts import FactsWalk, facts_of_chain
from odfweb3.odf.model_gen import (
    AddData,
    Checkpoint,
    DatasetKind,
    DataSlice,
    ExecuteTransform,
    MetadataBlock,
    OffsetInterval,
    Seed,
    SetInfo,
    SetLicense,
    SetTransform,
)
from odfweb3.odf.timestamp import Timestamp
from odfweb3.odf.validate import ChainRulesBackwards, ChainState, chain_state, check_chain_rules


def _h(rng: random.Random) -> bytes:
    return b"\x16\x20" + bytes(rng.getrandbits(8) for _ in range(32))


def _chain(rng: random.Random, n: int, bad: float) -> list[ChainEntry]:
    """A chain of ``n`` blocks oldest first, each field wrong with probability ``bad``."""

    def flip() -> bool:
        return rng.random() < bad

    kind = rng.choice([DatasetKind.ROOT, DatasetKind.DERIVATIVE])
    out: list[ChainEntry] = []
    offset: int | None = None
    checkpoint: bytes | None = None
    cps = [_h(rng) for _ in range(3)]  # few checkpoints: repeats and carried ones
    seconds = 1000
    wm = 100
    prev: bytes | None = None
    for seq in range(n):
        seconds += rng.choice([0, 1, 5]) if not flip() else -3
        time = Timestamp(2050, 1, max(0, seconds), 0)
        if seq == 0 and not flip():
            ev: object = Seed(dataset_id=b"\x00" * 34, dataset_kind=kind)
        else:
            pick = rng.random()
            if pick < 0.05 and bad:
                ev = Seed(dataset_id=b"\x00" * 34, dataset_kind=kind)
            elif pick < 0.12:
                ev = SetInfo(description=f"d{seq}", keywords=("k",))
            elif pick < 0.17:
                ev = SetLicense(short_name=f"L{seq}", name="n", spdx_id=None, website_url="w")
            elif pick < 0.22 and (bad or kind == DatasetKind.DERIVATIVE):
                ev = SetTransform(inputs=(), transform=None)
            else:
                data = None
                if rng.random() < 0.7 or not bad:
                    start = 0 if offset is None else offset + 1
                    if flip():
                        start += 1
                    end = start + rng.choice([0, 3, 9]) - (5 if flip() else 0)
                    iv = None if flip() else OffsetInterval(start=start, end=end)
                    data = DataSlice(
                        logical_hash=b"l", physical_hash=_h(rng), offset_interval=iv, size=7
                    )
                    if iv is not None:
                        new_offset: int | None = end
                    else:
                        new_offset = offset
                else:
                    new_offset = offset
                new_cp = None
                if rng.random() < 0.6:
                    new_cp = Checkpoint(
                        physical_hash=rng.choice([*cps, None][: 4 if bad else 3]), size=3
                    )
                if rng.random() < 0.5:
                    wm += rng.choice([0, 2]) if not flip() else -4
                    new_wm: Timestamp | None = Timestamp(2049, 1, max(0, wm), 0)
                else:
                    new_wm = None
                cls = AddData if rng.random() < 0.6 else ExecuteTransform
                if not bad:
                    cls = AddData if kind == DatasetKind.ROOT else ExecuteTransform
                prev_offset = offset if not flip() else (offset or 0) + 2
                prev_cp = checkpoint if not flip() else rng.choice(cps)
                if cls is AddData:
                    ev = AddData(prev_checkpoint=prev_cp, prev_offset=prev_offset, new_data=data,
                                 new_checkpoint=new_cp, new_watermark=new_wm)  # fmt: skip
                else:
                    ev = ExecuteTransform(query_inputs=() if rng.random() < 0.5 else None,
                                          prev_checkpoint=prev_cp, prev_offset=prev_offset,
                                          new_data=data, new_checkpoint=new_cp,
                                          new_watermark=new_wm)  # fmt: skip
                offset = new_offset
                if new_cp is not None:
                    checkpoint = new_cp.physical_hash
        number = seq if not flip() else seq + 1
        block = MetadataBlock(system_time=time, prev_block_hash=prev, sequence_number=number,
                              event=ev)  # type: ignore[arg-type]  # fmt: skip
        h = _h(rng)
        out.append(ChainEntry(h, block, 100 + seq))
        prev = h
    return out


def _backwards(entries: list[ChainEntry], after: ChainState | None = None) -> bool:
    rules = ChainRulesBackwards()
    for e in reversed(entries):
        rules.feed(e)
    return rules.finish(after=after)


@pytest.mark.parametrize("bad", [0.0, 0.02, 0.1, 0.3])
def test_the_backward_verdict_is_check_chain_rules_verdict(bad):
    rng = random.Random(f"rules-{bad}")
    seen = {True: 0, False: 0}
    for _ in range(1500):
        chain = _chain(rng, rng.randint(1, 14), bad)
        want = not check_chain_rules(chain)
        assert _backwards(chain) == want, chain
        seen[want] += 1
        # The same blocks continuing a chain whose state at its tip is known.
        if len(chain) > 2:
            cut = rng.randint(1, len(chain) - 1)
            older, newer = chain[:cut], chain[cut:]
            kinds = [e.block.event.dataset_kind for e in older if isinstance(e.block.event, Seed)]
            state = ChainState(
                older[-1],
                rng.choice([*kinds[:1], None, DatasetKind.ROOT]),
                rng.choice([None, 3, 9]),
                None,
                rng.choice([None, Timestamp(2049, 1, 100, 0)]),
            )
            if rng.random() < 0.5:  # the state the older blocks really leave
                state = chain_state(reversed(older))
            got = _backwards(newer, state)
            assert got == (not check_chain_rules(newer, after=state)), (newer, state)
    if bad == 0.0:
        assert seen[False] == 0  # the generator's valid chains are valid
    else:
        assert seen[True] > 20 and seen[False] > 20  # both verdicts exercised


def test_facts_walked_back_are_the_whole_chains_facts():
    rng = random.Random("facts")
    for _ in range(400):
        chain = _chain(rng, rng.randint(1, 14), 0.0)
        head_first = list(reversed(chain))
        walk = FactsWalk()
        for e in head_first:
            walk.feed(e)
        objs = list(iter_objects(head_first))
        got, want = walk.facts(objs), facts_of_chain(head_first)
        assert got == want
    walk = FactsWalk()
    walk.feed(dataclasses.replace(chain[-1]))
    with pytest.raises(ValueError, match="Seed"):
        walk.facts([])
