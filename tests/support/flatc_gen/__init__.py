"""flatc --python output for schemas/odf.fbs (reference accessors; generated, never edited).

Regenerate with `make schemas`. odfweb3's codec does not import these modules (see
odfweb3/odf/_codec_gen.py); the tests use them as an independent reader of our bytes.
"""
