"""JSON Schemas and JSON-LD contexts shipped with odfweb3 (installed as ``odfweb3.schemas``)."""
