"""arweave package."""
