"""ipfs package."""
