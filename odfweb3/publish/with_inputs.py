"""``publish --with-inputs``: a derivative and the inputs it consumed, published together.

Each input is published first (to the same target; one-dataset directory targets get
``OUT/inputs/NAME``), then the derivative with the inputs map in its record (the lineage map:
dataset ID -> ``ipns://NAME`` or ``ar://RECORD``), so a reader can verify the lineage from
signed records alone. :func:`plan_inputs` checks everything before anything is sent;
:func:`publish_with_inputs` runs the publishes through the function the caller passes (the
CLI's, which opens targets and reports progress).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odfweb3.errors import UsageError
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.identity import DatasetId
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import Seed, SetTransform
from odfweb3.publish.execute import PublishOutcome

__all__ = [
    "InputPublish",
    "PublishOne",
    "declared_inputs",
    "input_target",
    "inputs_in_order",
    "plan_inputs",
    "publish_with_inputs",
    "record_locator",
]

#: Publish one dataset directory to a target, with extra record facts; returns the outcome.
PublishOne = Callable[[str, str, Mapping[str, Any] | None], PublishOutcome]


@dataclass(frozen=True)
class InputPublish:
    """One input to publish before the derivative: its directory, dataset ID and target."""

    directory: str
    dataset_id: str
    target: str


def declared_inputs(dataset: str) -> tuple[str, set[str]]:
    """The dataset's ID and the input IDs its latest SetTransform declares."""
    declared: set[str] | None = None
    seed_id = ""
    for entry in walk_chain(DatasetReader.open(dataset)):  # head first
        event = entry.block.event
        if declared is None and isinstance(event, SetTransform):
            declared = {str(DatasetId.parse(i.dataset_ref or "")) for i in event.inputs or ()}
        if isinstance(event, Seed):
            seed_id = str(DatasetId.from_bytes(event.dataset_id or b""))
    return seed_id, declared or set()


def inputs_in_order(input_dirs: Sequence[str]) -> list[tuple[str, str]]:
    """``(dir, dataset id)`` of each ``--with-inputs`` dataset, inputs of another one first.

    When one listed input consumes another (``x`` reads ``a``, both inputs of ``y``), ``a``
    is published first, so the record ``x`` gets points at ``a``'s new upload, not an older
    one that may lack the blocks ``x`` consumed. Otherwise the order given is kept.

    Raises:
        UsageError: the listed inputs consume each other in a cycle.
    """
    pending = [(d, *declared_inputs(d)) for d in input_dirs]
    ordered: list[tuple[str, str]] = []
    while pending:
        waiting = {did for _, did, _ in pending}
        ready = next((p for p in pending if not (p[2] & (waiting - {p[1]}))), None)
        if ready is None:
            raise UsageError(
                "--with-inputs: the inputs consume each other in a cycle "
                f"({', '.join(d for d, _, _ in pending)}); nothing was published"
            )
        pending.remove(ready)
        ordered.append((ready[0], ready[1]))
    return ordered


def input_target(to: str, input_dir: str) -> str:
    """Where an input goes: the same target; one-dataset directories get OUT/inputs/NAME."""
    from odfweb3.backends import target_traits

    kind, sep, arg = to.partition(":")
    if sep and arg and target_traits(to).offline:  # a local directory holds one dataset
        return f"{kind}:{Path(arg) / 'inputs' / Path(input_dir).resolve().name}"
    return to


def record_locator(outcome: PublishOutcome) -> str:
    """How a consumer finds a published input: ``ipns://NAME`` or ``ar://RECORD``.

    Asked of the backends in rank order (:meth:`odfweb3.backends.Backend.record_locator`):
    each knows its own record (an IPNS name, an Arweave record id).

    Raises:
        UsageError: the publish left no record to point at.
    """
    from odfweb3.backends import all_backends

    state = outcome.state
    locators = (b.record_locator(state) for b in all_backends()) if state is not None else ()
    locator = next((loc for loc in locators if loc), None)
    if locator is None:
        raise UsageError(
            f"{outcome.plan.target}: the publish left no IPNS name or Arweave record id to "
            "point at; --with-inputs needs car:DIR, ipfs, bundle:DIR or arweave"
        )
    return locator


def plan_inputs(dataset: str, input_dirs: Sequence[str], to: str) -> list[InputPublish]:
    """The inputs to publish first, in order, each checked to be an input of ``dataset``.

    Raises:
        UsageError: an input the dataset does not consume, two inputs that would share an
            output directory, or inputs that consume each other in a cycle.
    """
    _, declared = declared_inputs(dataset)
    plan: list[InputPublish] = []
    seen_targets: set[str] = set()
    for input_dir, input_id in inputs_in_order(input_dirs):
        if input_id not in declared:
            raise UsageError(
                f"--with-inputs {input_dir}: {input_id} is not an input of {dataset} "
                "(its SetTransform names other datasets); nothing was published"
            )
        target = input_target(to, input_dir)
        if target != to and target in seen_targets:
            raise UsageError(
                f"--with-inputs: two inputs share the directory name {Path(input_dir).name}; "
                "rename one"
            )
        seen_targets.add(target)
        plan.append(InputPublish(input_dir, input_id, target))
    return plan


def publish_with_inputs(
    dataset: str, to: str, inputs: Sequence[InputPublish], publish_one: PublishOne
) -> tuple[dict[str, str], list[tuple[str, str, PublishOutcome]]]:
    """Publish each input, then ``dataset`` with the inputs map in its record.

    Returns the inputs map (dataset ID -> locator) and ``(directory, target, outcome)`` of
    every publish, the derivative last.
    """
    locators: dict[str, str] = {}
    done: list[tuple[str, str, PublishOutcome]] = []
    for item in inputs:
        outcome = publish_one(item.directory, item.target, None)
        locators[item.dataset_id] = record_locator(outcome)
        done.append((item.directory, item.target, outcome))
    outcome = publish_one(dataset, to, {"inputs": locators})
    done.append((dataset, to, outcome))
    return locators, done
