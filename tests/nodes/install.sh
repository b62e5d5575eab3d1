#!/usr/bin/env bash
# Install the npm test node and the npm oracles (DESIGN.md section 7). Run by `make nodes`.
# The IPFS test node is Kubo, built from its Go module by tools/go_nodes.sh (`make gonodes`);
# js-ipfs 0.66.1 left the suite with issue 17 (docs/jsipfs-notes.md keeps what was learnt).
#
#   tests/nodes/arlocal  arlocal 1.1.66 (local Arweave gateway)
#   tests/nodes/oracles  independent implementations: ipns, @libp2p/crypto, arweave, arbundles,
#                        ardrive-core-js
#
# Idempotent: a directory whose node_modules was installed from the same package.json, lockfile
# and command is skipped (stamp file node_modules/.odfweb3-stamp). The installs run in
# parallel (network-bound, except arlocal's sqlite3 native build). On failure the tail of the npm
# log is printed and the script exits non-zero. Logs: tests/nodes/.logs/<dir>.log.
#
# Every directory installs with `npm ci` from its lockfile. Notes on the lockfiles:
# - arlocal: a transitive dependency names avsc by git URL; package.json overrides it (5.7.7).
# - ardrive-core-js: human-crypto-keys overridden to 0.1.4 for the same reason.
# - Each directory's .npmrc sets omit-lockfile-registry-resolved so lockfiles never record
#   registry addresses.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
logs="$here/.logs"
mkdir -p "$logs"

command -v node >/dev/null || { echo "install.sh: node not found (need Node 20 + npm)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm not found (need Node 20 + npm)" >&2; exit 1; }
echo "test nodes: node $(node --version), npm $(npm --version)"

# arlocal needs sqlite3 (native). Its prebuilt binary is fetched from outside the npm registry, so
# here it is compiled. Against the system library (libsqlite3-dev) that takes seconds instead of
# compiling the bundled amalgamation; fall back to the bundled copy when the header is absent.
sqlite="${npm_config_sqlite:-}"
if [[ -z "$sqlite" && -f /usr/include/sqlite3.h ]]; then
    sqlite=/usr
fi

declare -A cmd=(
    [arlocal]="env npm_config_sqlite=$sqlite npm ci --no-audit --no-fund"
    [oracles]="npm ci --no-audit --no-fund"
)

stamp_of() {
    local dir="$1"
    cat "$here/$dir/package.json" "$here/$dir/package-lock.json" \
        | sha256sum | cut -d' ' -f1 | sed "s|\$| ${cmd[$dir]}|"
}

install_one() {
    local dir="$1" start end
    local stampfile="$here/$dir/node_modules/.odfweb3-stamp"
    local want
    want="$(stamp_of "$dir")"
    if [[ -f "$stampfile" && "$(cat "$stampfile")" == "$want" ]]; then
        echo "  $dir: up to date"
        return 0
    fi
    start=$(date +%s)
    if ! (cd "$here/$dir" && ${cmd[$dir]}) >"$logs/$dir.log" 2>&1; then
        end=$(date +%s)
        {
            echo "install.sh: '${cmd[$dir]}' failed in tests/nodes/$dir after $((end - start)) s."
            echo "---- last 40 lines of $logs/$dir.log ----"
            tail -n 40 "$logs/$dir.log"
            echo "----"
        } >&2
        return 1
    fi
    echo "$want" >"$stampfile"
    end=$(date +%s)
    echo "  $dir: installed in $((end - start)) s"
}

t0=$(date +%s)
pids=()
names=()
for dir in arlocal oracles; do
    install_one "$dir" &
    pids+=($!)
    names+=("$dir")
done
failed=()
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${names[$i]}")
done
t1=$(date +%s)

if ((${#failed[@]})); then
    echo "install.sh: FAILED: ${failed[*]} (total $((t1 - t0)) s)" >&2
    exit 1
fi

# Smoke checks: the binaries the test fixtures run must exist.
for bin in arlocal/node_modules/.bin/arlocal; do
    [[ -x "$here/$bin" ]] || { echo "install.sh: missing $bin after install" >&2; exit 1; }
done
echo "test nodes ready in $((t1 - t0)) s"
