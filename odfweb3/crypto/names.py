"""Names the command line shows when it builds its parser: IPNS key file forms, the
passphrase's environment variable.

A module of its own, without the cryptography imports of the codecs that use these names
(:mod:`odfweb3.crypto.ipns_keyfile`, :mod:`odfweb3.read.unseal`): the parser lists them as
``--format`` choices and in help texts on every start-up.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ENCRYPTED",
    "FORMATS",
    "KUBO_FORMATS",
    "LIBP2P_CLEARTEXT",
    "PASSPHRASE_ENV",
    "PEM_CLEARTEXT",
    "PEM_ENCRYPTED",
]

ENCRYPTED: Final = "odfweb3-encrypted"
LIBP2P_CLEARTEXT: Final = "libp2p-protobuf-cleartext"
PEM_CLEARTEXT: Final = "pem-pkcs8-cleartext"
PEM_ENCRYPTED: Final = "pem-pkcs8-encrypted"  # read only (openssl pkcs8 -topk8)
FORMATS: Final = (ENCRYPTED, PEM_CLEARTEXT, LIBP2P_CLEARTEXT)
KUBO_FORMATS: Final = (PEM_CLEARTEXT, LIBP2P_CLEARTEXT)

#: Where a passphrase may come from instead of a file or a prompt (never argv).
PASSPHRASE_ENV: Final = "ODFWEB3_PASSPHRASE"
