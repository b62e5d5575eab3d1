#!/usr/bin/env bash
# `make demo`: the main job on the embedded default (offline publish, no daemon).
# Builds an example dataset, publishes it as CAR + IPNS record, appends blocks,
# publishes the delta, and verifies both CARs and the record.
set -euo pipefail
cd "$(dirname "$0")/.."
ODF=.venv/bin/odfweb3
OUT=demo-out
rm -rf "$OUT"
mkdir -p "$OUT"
# Keys, state and config of the demo stay inside demo-out/, away from the user's own.
export ODFWEB3_KEYSTORE="$PWD/$OUT/keys" ODFWEB3_STATE_DIR="$PWD/$OUT/state"
export XDG_CONFIG_HOME="$PWD/$OUT/config"
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

step "done: see $OUT/ (ipfs/publish.json says how to import into a node)"
ls -l "$OUT/ipfs"
