"""odfweb3: publish Open Data Fabric datasets to IPFS and Arweave, and verify them by head hash."""

__all__ = ["__version__"]

__version__ = "0.1.0"
