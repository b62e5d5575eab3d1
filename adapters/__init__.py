"""Network adapters for odfweb3, installed as ``odfweb3.adapters``.

This module is the composition root: it alone chooses implementations for a
target URL. The pure format modules inside each adapter never import network code.
"""

__all__: list[str] = []
