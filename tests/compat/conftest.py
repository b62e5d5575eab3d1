"""Fixtures for the compatibility tests (independent npm implementations as oracles)."""

from tests.unit.adapters.arweave.conftest import FIXED_WALLET_PATH, fixed_wallet, session_wallet

__all__ = ["FIXED_WALLET_PATH", "fixed_wallet", "session_wallet"]
