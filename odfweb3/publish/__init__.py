"""publish package."""
