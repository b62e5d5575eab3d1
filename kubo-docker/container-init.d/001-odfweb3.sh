#!/bin/sh
# odfweb3 settings for the Kubo container; the image runs /container-init.d/* after
# `ipfs init` and before `ipfs daemon`, on every start (so every line is idempotent).
set -eu

# Listen on all interfaces INSIDE the container; docker-compose.yml publishes both ports on
# the host's 127.0.0.1 only.
ipfs config Addresses.API /ip4/0.0.0.0/tcp/5001
ipfs config Addresses.Gateway /ip4/0.0.0.0/tcp/8080

# `ipfs add -r` on this node gives the same CIDs odfweb3 computes by default (DESIGN.md
# section 4: CIDv1, raw leaves, 256 KiB chunks, sha2-256), so a dataset added by hand and
# one published by odfweb3 share every block.
ipfs config --json Import.CidVersion 1
ipfs config --json Import.UnixFSRawLeaves true
ipfs config Import.UnixFSChunker size-262144
ipfs config Import.HashFunction sha2-256

# Announce what is pinned (the published roots and everything under them), not every
# cached block: odfweb3 pins each published root recursively.
ipfs config Reprovider.Strategy pinned

# Room for datasets; garbage collection only removes blocks no pin reaches.
ipfs config Datastore.StorageMax 100GB

# odfweb3 puts its own pre-signed IPNS records (with the _odf extension) via routing/put and
# never imports dataset keys unless the node cannot store records (see docs/ipfs.md); keep
# Kubo's own republisher from re-signing odfweb3 names without the extension: it only
# republishes keys in this node's keystore, which odfweb3 leaves empty.
echo "odfweb3: Kubo configured (API and gateway on 127.0.0.1 via docker-compose.yml)"
