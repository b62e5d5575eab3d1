#!/bin/sh
# odfweb3 settings for the Kubo container; the image runs /container-init.d/* after
# `ipfs init` and before `ipfs daemon`, on every start (so every line is idempotent).
# Checked against the Kubo the test suite builds (same version as docker-compose.yml) by
# tests/integration/test_kubo_docker_config.py: this script runs on a fresh repo, the daemon
# starts, and `ipfs add -r --only-hash` gives odfweb3's CIDs.
set -eu

# A volume made by an older Kubo: bring the repo to this Kubo's version first (a no-op
# when it is current; `ipfs config` refuses a repo that needs migration).
ipfs repo migrate

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
# cached block: odfweb3 pins each published root recursively. Kubo >= 0.38 reads this from
# Provide.Strategy and refuses to start while the old Reprovider section has fields (an
# older version of this script set Reprovider.Strategy): empty it.
ipfs config Provide.Strategy pinned
ipfs config --json Reprovider '{}'

# Room for datasets; garbage collection only removes blocks no pin reaches.
ipfs config Datastore.StorageMax 100GB

# No usage telemetry leaves this node.
ipfs config Plugins.Plugins.telemetry.Config.Mode off

# odfweb3 puts its own pre-signed IPNS records (with the _odf extension) with name/put (Kubo
# >= 0.40 checks signature, size and sequence) and never imports dataset keys unless the node
# cannot store records (see docs/ipfs.md); Kubo's own republisher only re-signs keys in this
# node's keystore, which odfweb3 leaves empty, so it never drops the extension.
echo "odfweb3: Kubo configured (API and gateway on 127.0.0.1 via docker-compose.yml)"
