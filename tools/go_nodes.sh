#!/usr/bin/env bash
# Build the Go test nodes from their Go modules (run by `make gonodes`, part of `make test`).
#
#   .gonodes/bin/ipfs     Kubo v0.43.1 (github.com/ipfs/kubo/cmd/ipfs)
#   .gonodes/bin/ipfs-cluster-service, ipfs-cluster-ctl
#                         IPFS Cluster v1.1.6 (github.com/ipfs-cluster/ipfs-cluster/cmd/...)
#
# Layout (all ignored by git): .gonodes/bin/ the binaries, .gonodes/build/<node>/ the writable
# module copy a build runs in, .gonodes/stamps/<node> the key of the recipe that produced the
# binary, .gonodes/logs/<node>.log the build output. Go's own module cache (GOMODCACHE) and build
# cache (GOCACHE) are used as configured, so a second clone on the same machine compiles nothing.
#
# One function per node: `build_<node> OUTDIR` builds into OUTDIR/; `version_<node>` prints the
# version. To add a node, write both functions and append its name to NODES. The stamp is the
# sha256 of the node's version, the text of both functions and of the shared helpers below, and
# `go version`: changing the recipe or the toolchain rebuilds, nothing else does.
#
# Usage: tools/go_nodes.sh [NODE...]   (default: every node in NODES)
# On failure: the tail of the build log, then one line naming the node, the step and the log.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gonodes="${ODFWEB3_GONODES:-$root/.gonodes}"
bindir="$gonodes/bin"
builddir="$gonodes/build"
stampdir="$gonodes/stamps"
logdir="$gonodes/logs"

NODES=(kubo cluster)

# The module's unpacked source in GOMODCACHE (downloaded through the module proxy if absent).
module_dir() {
    go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}

# A writable copy of a module's source, fresh for each build.
module_copy() {
    local module="$1" dest="$2" src
    src="$(module_dir "$module")"
    rm -rf "$dest"
    mkdir -p "$(dirname "$dest")"
    cp -r "$src" "$dest"
    chmod -R u+w "$dest"
}

# ---------------------------------------------------------------- Kubo
#
# `go install github.com/ipfs/kubo/cmd/ipfs@v0.43.1` does not work: kubo v0.43.1's go.mod has
#   replace github.com/libp2p/go-libp2p => github.com/lidel/go-libp2p v0.0.0-20260914191659-9c4ee60cf924
# (`go install pkg@version` refuses any module with a replace directive, and the module proxy
# answers 403 "not available" for that fork anyway), and the version kubo requires, go-libp2p
# v0.49.0, does not compile against the webtransport-go v0.13 kubo also requires
# (`undefined: webtransport.Dialer`). go-libp2p v0.50.0 does. So: copy the module, drop the
# replace line, require go-libp2p v0.50.0, build with -mod=mod (go.sum gets the new sums).
# `ipfs version` still reports 0.43.1. See docs/dependencies.md ("Kubo").
KUBO_VERSION=v0.43.1
KUBO_LIBP2P=v0.50.0

version_kubo() { echo "$KUBO_VERSION libp2p=$KUBO_LIBP2P"; }

build_kubo() {
    local out="$1" src="$builddir/kubo"
    module_copy "github.com/ipfs/kubo@$KUBO_VERSION" "$src"
    (
        cd "$src"
        sed -i '/^replace github.com\/libp2p\/go-libp2p =>/d' go.mod
        go mod edit -require="github.com/libp2p/go-libp2p@$KUBO_LIBP2P"
        go build -mod=mod -trimpath -o "$out/ipfs" ./cmd/ipfs
    )
    "$out/ipfs" version --number | grep -qx "${KUBO_VERSION#v}"
}

# ---------------------------------------------------------------- IPFS Cluster
#
# v1.1.6 (2026-05-11) is the newest version the module proxy serves here: its version list
# (@v/list) answers 403, v1.1.7, v1.1.8 and v1.2.0 answer 403 "not available", v1.1.5 has no
# checksum-database entry (404). Its go.mod has no replace directive and says `go 1.26`; it
# builds unmodified. `go install ...@v1.1.6` still fails (it looks the module's deprecation up
# in the refused version list), so the build runs in a copy of the module like Kubo's.
CLUSTER_VERSION=v1.1.6

version_cluster() { echo "$CLUSTER_VERSION"; }

build_cluster() {
    local out="$1" src="$builddir/cluster"
    module_copy "github.com/ipfs-cluster/ipfs-cluster@$CLUSTER_VERSION" "$src"
    (
        cd "$src"
        go build -mod=mod -trimpath -o "$out/" ./cmd/ipfs-cluster-service ./cmd/ipfs-cluster-ctl
    )
    "$out/ipfs-cluster-service" --version | grep -qx "ipfs-cluster-service version ${CLUSTER_VERSION#v}"
    "$out/ipfs-cluster-ctl" --version | grep -qx "ipfs-cluster-ctl version ${CLUSTER_VERSION#v}"
}

# ---------------------------------------------------------------- driver

stamp_key() {
    local node="$1"
    {
        "version_$node"
        declare -f "build_$node" "version_$node" module_dir module_copy
        go version
    } | sha256sum | cut -d' ' -f1
}

ensure() {
    local node="$1" key stamp log start end tmp
    key="$(stamp_key "$node")"
    stamp="$stampdir/$node"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
        echo "  $node: up to date ($("version_$node"))"
        return 0
    fi
    mkdir -p "$bindir" "$stampdir" "$logdir"
    log="$logdir/$node.log"
    tmp="$gonodes/tmp-$node"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    echo "  $node: building $("version_$node") (log: ${log#"$root"/})"
    start=$(date +%s)
    # Not `if ! (build)` nor `build || rc=$?`: bash ignores errexit in a condition, so a
    # failed step would not stop the build and the log would end with a later, misleading
    # error. The first failing step ends the build.
    local rc
    set +e
    (
        set -e
        "build_$node" "$tmp"
    ) >"$log" 2>&1
    rc=$?
    set -e
    if ((rc != 0)); then
        end=$(date +%s)
        echo "---- last 25 lines of $log ----" >&2
        tail -n 25 "$log" >&2
        echo "----" >&2
        echo "go_nodes.sh: building $node $("version_$node") failed after $((end - start)) s;" \
            "log: $log" >&2
        return 1
    fi
    # Objects first, stamp last: a half-copied binary never carries a valid stamp.
    for f in "$tmp"/*; do
        mv -f "$f" "$bindir/"
    done
    rm -rf "$tmp" "${builddir:?}/$node"
    echo "$key" >"$stamp"
    end=$(date +%s)
    echo "  $node: built in $((end - start)) s"
}

command -v go >/dev/null || {
    echo "go_nodes.sh: 'go' not found: install Go >= 1.26 (Kubo v0.43.1 needs it) and retry" >&2
    exit 1
}
command -v python3 >/dev/null || { echo "go_nodes.sh: 'python3' not found" >&2; exit 1; }

want=("$@")
((${#want[@]})) || want=("${NODES[@]}")
for node in "${want[@]}"; do
    declare -F "build_$node" >/dev/null || {
        echo "go_nodes.sh: unknown node '$node' (known: ${NODES[*]})" >&2
        exit 2
    }
    ensure "$node"
done
