"""Test support: real test nodes (Kubo: `make gonodes`; arlocal and npm oracles: `make nodes`)."""

__all__: list[str] = []
