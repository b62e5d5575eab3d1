#!/usr/bin/env bash
# `make demo`: the main job on the embedded default (offline publish, no daemon).
# Builds an example dataset, publishes it as CAR + IPNS record, appends blocks,
# publishes the delta, and verifies both CARs and the record.
set -euo pipefail
cd "$(dirname "$0")/.."
ODF=.venv/bin/odfweb3
OUT=${ODFWEB3_DEMO_OUT:-demo-out}  # tests point it at a temporary directory
rm -rf "$OUT"
mkdir -p "$OUT"
OUT_ABS=$(cd "$OUT" && pwd)
# Keys, state and config of the demo stay inside demo-out/, away from the user's own.
export ODFWEB3_KEYSTORE="$OUT_ABS/keys" ODFWEB3_STATE_DIR="$OUT_ABS/state"
export XDG_CONFIG_HOME="$OUT_ABS/config"
mkdir -p "$XDG_CONFIG_HOME/odfweb3"
cat > "$XDG_CONFIG_HOME/odfweb3/odfweb3.yaml" <<'YAML'
# The publisher named in the discovery descriptor published beside the dataset.
publisher:
  type: Organization
  name: odfweb3 demo
  homepage: https://example.org/odfweb3-demo
YAML

step() { printf '\n== %s\n' "$*"; }

step "1. build an example root dataset (5 data blocks, 2 MiB)"
$ODF example "$OUT/dataset" --blocks 5 --data-bytes 2MiB --seed 42
$ODF inspect "$OUT/dataset"
$ODF validate "$OUT/dataset" --deep

step "2. publish offline: CAR + signed IPNS record (car:$OUT/ipfs)"
$ODF publish "$OUT/dataset" --to "car:$OUT/ipfs"

step "3. append 2 blocks and publish again: only the delta is written"
$ODF example "$OUT/dataset" --append 2
$ODF publish "$OUT/dataset" --to "car:$OUT/ipfs"

step "4. verify both CARs and the IPNS record against the local dataset"
$ODF verify "$OUT/dataset" --against "car:$OUT/ipfs" --deep

if $ODF wallet --help >/dev/null 2>&1; then
  step "5. Arweave, offline: one signed ANS-104 bundle (throw-away wallet)"
  $ODF wallet new "$OUT/throwaway-wallet.json"
  $ODF publish "$OUT/dataset" --to "bundle:$OUT/arweave" --wallet "$OUT/throwaway-wallet.json"
fi

# What was verified, from the tool's own --json answers (set -e: any failure stopped us above).
field() { .venv/bin/python -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
HEAD=$($ODF inspect "$OUT/dataset" --json | field 'd["head"]')
VALID=$($ODF validate "$OUT/dataset" --deep --json)
BLOCKS=$(field 'd["blocks"]' <<<"$VALID")
CHECKED=$(field 'd["objectsChecked"]' <<<"$VALID")
REPLICA=$($ODF verify "$OUT/dataset" --against "car:$OUT/ipfs" --deep --json)
STATUS=$(field 'd["replicas"][0]["status"]' <<<"$REPLICA")
REHASHED=$(field 'd["replicas"][0]["objectsChecked"]' <<<"$REPLICA")
SEQUENCE=$(field 'd["sequence"]' <"$OUT/ipfs/publish.json")

step "done: what this demo verified"
echo "- $OUT/dataset is valid: $BLOCKS blocks, every block hash and chain rule checked,"
echo "  $CHECKED data files and checkpoints hashed (validate --deep);"
echo "- the second publish wrote only the delta (a second, small CAR) and moved the signed"
echo "  IPNS record to sequence $SEQUENCE;"
echo "- car:$OUT/ipfs is $STATUS to the local head $HEAD:"
echo "  its IPNS record checked (signature, name, _odf head), $REHASHED objects re-hashed"
echo "  from the CARs (verify --deep);"
if [ -d "$OUT/arweave" ]; then
  echo "- bundle:$OUT/arweave holds one ANS-104 bundle signed by the throw-away wallet."
fi
echo "Files: $OUT/ (ipfs/publish.json lists the commands that import it into a node)."
