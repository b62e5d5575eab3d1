#!/usr/bin/env bash
# `make schemas`: regenerate everything derived from the ODF FlatBuffers schema.
#   1. schemas/odf.fbs          subset of the upstream schema (only if the reference copy exists)
#   2. tests/support/flatc_gen/  flatc --python accessors (reference only; checked in, never edited)
#   3. odfweb3/odf/model_gen.py, odfweb3/odf/_codec_gen.py   our generator (tools/gen_odf_model.py)
# flatc comes from Debian's flatbuffers-compiler; it is installed here, never by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
REF=${ODF_REF_FBS:-../shared/ref/opendatafabric.fbs}
OUT=tests/support/flatc_gen

if [[ -f "$REF" ]]; then
    "$PY" tools/gen_odf_model.py subset "$REF" schemas/odf.fbs
fi

if ! command -v flatc >/dev/null 2>&1; then
    echo "flatc not found: installing Debian package flatbuffers-compiler" >&2
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq flatbuffers-compiler
fi

rm -rf "$OUT"
mkdir -p "$OUT"
flatc --python -o "$OUT" schemas/odf.fbs
cat > "$OUT/__init__.py" <<'PYEOF'
"""flatc --python output for schemas/odf.fbs (reference accessors; generated, never edited).

Regenerate with `make schemas`. odfweb3's codec does not import these modules (see
odfweb3/odf/_codec_gen.py); the tests use them as an independent reader of our bytes.
"""
PYEOF
echo "flatc $(flatc --version | awk '{print $3}')" > "$OUT/FLATC_VERSION"

"$PY" tools/gen_odf_model.py generate schemas/odf.fbs odfweb3/odf/model_gen.py odfweb3/odf/_codec_gen.py
.venv/bin/ruff format --quiet odfweb3/odf/model_gen.py odfweb3/odf/_codec_gen.py
.venv/bin/ruff check --quiet --fix odfweb3/odf/model_gen.py odfweb3/odf/_codec_gen.py
echo "schemas regenerated"
