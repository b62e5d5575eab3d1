"""The readers' fork-choice rule (resolve.choose_latest) and the publisher's post-check
(resolve.competing_winner) that shares it: who wins a race between two uploads."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from odfweb3_arweave.formats.record import RecordTags
from odfweb3_arweave.read.lookup import Upload, choose_latest, competing_winner

OWNER = "o" * 43
DID = "did:odf:fed01" + "00" * 32


def head(n: int) -> str:
    return "f1620" + f"{n:064x}"


def up(
    uid: str,
    prev: Upload | None,
    height: int | None,
    unix_time: int = 1_700_000_000,
    head_no: int | None = None,
) -> Upload:
    """An upload record as GraphQL would show it; heads follow the upload chain."""
    n = head_no if head_no is not None else sum(map(ord, uid))
    facts = RecordTags(
        dataset_id=DID,
        head=head(n),
        prev_head=prev.facts.head if prev else None,
        prev_upload=prev.id if prev else None,
        manifest_id="m" * 43,
        unix_time=unix_time,
        app_version="0",
    )
    return Upload(uid, OWNER, facts, (), height)


ROOT = up("R", None, 100)


def all_orders(uploads: list[Upload]) -> set[str | None]:
    """The chosen upload's id over every input order (must be one answer)."""
    return {
        (w.id if (w := choose_latest(list(p))) else None) for p in itertools.permutations(uploads)
    }


def test_linear_chain_latest_is_the_tip() -> None:
    a = up("A", ROOT, 101)
    b = up("B", a, 105)
    assert all_orders([ROOT, a, b]) == {"B"}
    assert choose_latest([]) is None


def test_race_first_mined_sibling_wins_and_its_descendants_follow() -> None:
    a = up("A", ROOT, 101)
    b = up("B", ROOT, 102)  # same parent, mined later: loses
    assert all_orders([ROOT, a, b]) == {"A"}
    a2 = up("A2", a, 150)
    assert all_orders([ROOT, a, b, a2]) == {"A2"}
    # A descendant of the loser loses with it, however new it is.
    b2 = up("B2", b, 200)
    assert all_orders([ROOT, a, b, a2, b2]) == {"A2"}


def test_confirmed_sibling_beats_pending_one() -> None:
    a = up("A", ROOT, 101, unix_time=2_000_000_000)
    b = up("B", ROOT, None, unix_time=1_000_000_000)  # pending: ranks after any block
    assert all_orders([ROOT, a, b]) == {"A"}


def test_same_block_ties_break_by_unix_time_then_id() -> None:
    a = up("A", ROOT, 101, unix_time=20)
    b = up("B", ROOT, 101, unix_time=10)
    assert all_orders([ROOT, a, b]) == {"B"}
    c = up("C", ROOT, 101, unix_time=10)
    assert all_orders([ROOT, a, b, c]) == {"B"}  # "B" < "C"
    p = up("P", ROOT, None, unix_time=5)
    q = up("Q", ROOT, None, unix_time=5)
    assert all_orders([ROOT, p, q]) == {"P"}  # both pending: still one answer


def test_old_losing_branch_does_not_hide_newer_uploads_when_its_rival_left_the_page() -> None:
    a = up("A", ROOT, 101)
    b = up("B", ROOT, 102)  # lost to A; A itself fell off the GraphQL page below
    a2 = up("A2", a, 103)
    a3 = up("A3", a2, 104)
    assert all_orders([b, a2, a3]) == {"A3"}


def test_two_first_uploads_race_too() -> None:
    a = up("A", None, 7)
    b = up("B", None, 8)
    assert all_orders([a, b]) == {"A"}


def test_competing_winner_names_the_rival_that_beat_us() -> None:
    a = up("A", ROOT, 101)
    b = up("B", ROOT, 102)
    assert competing_winner([ROOT, a, b], b) == a
    assert competing_winner([ROOT, a, b], a) is None


def test_ancestors_and_descendants_of_ours_never_compete() -> None:
    a = up("A", ROOT, 101)
    a2 = up("A2", a, 102)
    assert competing_winner([ROOT, a], a) is None  # ROOT is our ancestor
    assert competing_winner([ROOT, a, a2], a) is None  # someone built on ours


def test_identical_heads_are_no_conflict() -> None:
    a = up("A", ROOT, 101, head_no=9)
    b = up("B", ROOT, 102, head_no=9)
    assert choose_latest([ROOT, a, b]) == a
    assert competing_winner([ROOT, a, b], b) is None


def test_ours_not_yet_indexed_is_judged_as_given() -> None:
    a = up("A", ROOT, 101)
    b = up("B", ROOT, None)
    assert competing_winner([ROOT, a], b) == a
    assert competing_winner([ROOT], a) is None


@given(
    st.lists(
        st.tuples(
            st.integers(0, 5), st.one_of(st.none(), st.integers(100, 104)), st.integers(0, 3)
        ),
        min_size=1,
        max_size=7,
    ),
    st.randoms(use_true_random=False),
)
def test_writer_and_reader_agree_and_order_does_not_matter(
    spec: list[tuple[int, int | None, int]], rnd: object
) -> None:
    """Random upload graphs: one winner in any order, and exactly the uploads on the
    winner's line (or with its head) pass the post-check."""
    uploads: list[Upload] = []
    for i, (parent, height, t) in enumerate(spec):
        prev = uploads[parent % len(uploads)] if uploads and parent else None
        uploads.append(up(f"U{i}", prev, height, unix_time=t))
    winner = choose_latest(uploads)
    assert winner is not None
    shuffled = list(uploads)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert choose_latest(shuffled) == winner
    line = set()
    current: Upload | None = winner
    by_id = {u.id: u for u in uploads}
    while current is not None:
        line.add(current.id)
        current = by_id.get(current.facts.prev_upload or "")
    for u in uploads:
        stands = competing_winner(uploads, u) is None
        assert stands == (u.id in line or u.facts.head == winner.facts.head)
