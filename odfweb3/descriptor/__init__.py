"""The discovery descriptor: a JSON-LD description of a dataset, readable without odfweb3.

Built from the chain (:mod:`.build`), checked like a SHACL shape (:mod:`.validate`), written
and read as bytes (:mod:`.codec`), summarised as Arweave tags (:mod:`.arweave_tags`) and as
Turtle (:mod:`.turtle`), and cut down to the summary an encrypted publish may carry
(:mod:`.summary`). The choices the document makes are told in :mod:`.build`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odfweb3.descriptor.arweave_tags import descriptor_tags
    from odfweb3.descriptor.build import (
        CONTEXT_RESOURCE,
        DATASET_TYPE,
        LOCATOR_SCHEMES,
        MEDIA_TYPE,
        ODF_SPEC_URL,
        build_descriptor,
        derive_title,
        descriptor_context,
        descriptor_from_facts,
        with_locators,
    )
    from odfweb3.descriptor.codec import decode_descriptor, encode_descriptor
    from odfweb3.descriptor.turtle import to_turtle
    from odfweb3.descriptor.validate import DescriptorProblem, validate_descriptor

__all__ = [
    "CONTEXT_RESOURCE",
    "DATASET_TYPE",
    "LOCATOR_SCHEMES",
    "MEDIA_TYPE",
    "ODF_SPEC_URL",
    "DescriptorProblem",
    "build_descriptor",
    "decode_descriptor",
    "derive_title",
    "descriptor_context",
    "descriptor_from_facts",
    "descriptor_tags",
    "encode_descriptor",
    "to_turtle",
    "validate_descriptor",
    "with_locators",
]

# name -> the submodule defining it, loaded on first access (PEP 562): a module that needs one
# piece (a publish's start-up reads build and codec) does not load every other (validate,
# turtle, the Arweave tags).
_LAZY = {
    "descriptor_tags": "arweave_tags",
    **dict.fromkeys(
        (
            "CONTEXT_RESOURCE",
            "DATASET_TYPE",
            "LOCATOR_SCHEMES",
            "MEDIA_TYPE",
            "ODF_SPEC_URL",
            "build_descriptor",
            "derive_title",
            "descriptor_context",
            "descriptor_from_facts",
            "with_locators",
        ),
        "build",
    ),
    "decode_descriptor": "codec",
    "encode_descriptor": "codec",
    "to_turtle": "turtle",
    "DescriptorProblem": "validate",
    "validate_descriptor": "validate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'odfweb3.descriptor' has no attribute {name!r}")
    value = getattr(import_module(f"odfweb3.descriptor.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
