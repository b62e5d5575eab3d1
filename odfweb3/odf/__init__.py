"""odf package."""
