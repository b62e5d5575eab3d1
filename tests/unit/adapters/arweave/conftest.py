"""Shared fixtures for the Arweave format tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from odfweb3_arweave.wallet import Wallet, generate_wallet, load_wallet

VECTORS = Path(__file__).parent / "vectors"
FIXED_WALLET_PATH = VECTORS / "TEST_ONLY_wallet.json"


@pytest.fixture(scope="session")
def fixed_wallet() -> Wallet:
    """The checked-in test-only wallet (deterministic owner and address)."""
    return load_wallet(FIXED_WALLET_PATH)


@pytest.fixture(scope="session")
def session_wallet() -> Wallet:
    """A wallet generated once per test session (RSA-4096 generation is slow)."""
    return generate_wallet()
