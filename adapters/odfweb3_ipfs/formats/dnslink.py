"""DNSLink for a published IPNS name: the TXT record a domain owner sets (dnslink.dev).

``publish --dnslink example.org`` prints::

    _dnslink.example.org TXT "dnslink=/ipns/k51…"

so that ``ipns://example.org`` resolves (through the node's DNS, see
:func:`odfweb3_ipfs.read.dns_lookup.node_dns_lookup`) to the dataset's IPNS name, whose
signed record is then checked as for ``ipns://k51…``. DNS is not authenticated: the record
only says which name to follow; everything after it is verified.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from odfweb3.errors import ResolutionError, UsageError
from odfweb3_ipfs.formats.libp2p_keys import IpnsName

__all__ = ["DnsLinkRecord", "check_domain", "dnslink_record", "parse_dnslink"]

_LABEL: Final = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_MAX_DOMAIN: Final = 253 - len("_dnslink.")  # RFC 1035: 253 characters without the root dot


def check_domain(domain: str) -> str:
    """``domain`` lower-cased without a trailing dot, if it is a DNS host name.

    Raises:
        UsageError: not a host name (LDH labels of 1-63 characters, two labels or more).
    """
    name = domain.strip().lower().removesuffix(".")
    labels = name.split(".")
    if (
        len(name) > _MAX_DOMAIN
        or len(labels) < 2
        or not all(_LABEL.match(label) for label in labels)
    ):
        raise UsageError(
            f"--dnslink {domain!r}: not a domain name; give one like example.org "
            "(letters, digits and hyphens, labels separated by dots)"
        )
    return name


class DnsLinkRecord:
    """The TXT record naming ``/ipns/NAME`` for a domain."""

    __slots__ = ("domain", "name")

    def __init__(self, domain: str, name: IpnsName | str) -> None:
        self.domain = check_domain(domain)
        self.name = str(name)

    @property
    def host(self) -> str:
        """Where the record goes: ``_dnslink.<domain>``."""
        return f"_dnslink.{self.domain}"

    @property
    def value(self) -> str:
        """The TXT string: ``dnslink=/ipns/<name>``."""
        return f"dnslink=/ipns/{self.name}"

    def zone_line(self) -> str:
        """The record as one zone-file-like line: ``_dnslink.D TXT "dnslink=/ipns/N"``."""
        return f'{self.host} TXT "{self.value}"'

    def to_json(self) -> dict[str, str]:
        """JSON form for ``--json`` output."""
        return {"host": self.host, "type": "TXT", "value": self.value, "record": self.zone_line()}


def dnslink_record(domain: str, name: IpnsName | str) -> DnsLinkRecord:
    """The DNSLink TXT record pointing ``domain`` at the IPNS ``name``."""
    return DnsLinkRecord(domain, name)


def parse_dnslink(domain: str, txt: Sequence[str]) -> str:
    """The path a domain's ``_dnslink`` TXT strings name (the first valid, sorted).

    Raises:
        ResolutionError: no ``dnslink=/ipfs/…`` or ``dnslink=/ipns/…`` entry.
    """
    values: list[str] = []
    for entry in txt:
        text = entry.strip()
        if not text.startswith("dnslink="):
            continue
        value = text[len("dnslink=") :].strip()
        parts = value.split("/")  # "/ipfs/<id>[/...]" -> ["", "ipfs", "<id>", ...]
        if len(parts) >= 3 and parts[0] == "" and parts[1] in ("ipfs", "ipns") and parts[2]:
            values.append(value)
    values.sort()
    if not values:
        raise ResolutionError(
            f"DNSLink {domain}: no TXT record 'dnslink=/ipfs/…' or 'dnslink=/ipns/…' at "
            f"_dnslink.{domain}"
        )
    return values[0]
