"""Test support: real test nodes (js-ipfs, arlocal) and npm oracles, installed by `make nodes`."""

__all__: list[str] = []
