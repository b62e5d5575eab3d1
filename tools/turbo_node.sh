#!/usr/bin/env bash
# Install the Turbo bundler the tests upload through (run by `make turbonode`, part of `make test`).
#
# ArDrive's Turbo upload service (AGPL, a test server only: none of its code goes into odfweb3)
# is a read-only snapshot in ../shared/turbo-upload-service (see
# ../shared/turbo-upload-service.SOURCE.md). This script copies it to a writable build folder,
# patches the copy so it installs from the registries this machine reaches, installs its npm
# dependencies with the yarn release it ships, and builds its two programs:
#
#   .testnodes/turbo/service/lib/index.js                          the upload API
#   .testnodes/turbo/service/ecs/fulfillment-pipeline/dist/app.js  bundling, posting, seeding
#
# Debian packages it runs beside them (postgresql, redis-server) are installed with apt, as
# root like CI. moto (standing in for S3, SQS, DynamoDB, Secrets Manager and SSM) comes from the
# pyproject [dev] extras; arlocal from tests/nodes. tests/support/turbo.py starts everything.
#
# The key is the sha256 of the snapshot's package.json and yarn.lock, the text of every recipe
# function below, and `node --version`. The build lives once per machine, under that key, in
# ${ODFWEB3_TURBO_CACHE:-~/.cache/odfweb3/turbo}/<key>/ (like Go's build cache: a second clone,
# or CI's fresh one, links it in a few milliseconds instead of spending 10-18 minutes of yarn
# and tsc); .testnodes/turbo/service is a link to it and .testnodes/turbo/stamp its key. A
# build is made in a temporary folder and renamed into place whole, so a half-built service
# is never used; older keys are removed. On failure: the tail of the log, then one line
# naming the step and the log.
#
# Usage: tools/turbo_node.sh            (ODFWEB3_TURBO_SRC overrides the snapshot's folder)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${ODFWEB3_TURBO_SRC:-$root/../shared/turbo-upload-service}"
top="$root/.testnodes/turbo"
link="$top/service"
stamp="$top/stamp"
log="$top/install.log"
cache="${ODFWEB3_TURBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/odfweb3/turbo}"
svc=""  # the folder the steps build in (set below)

# Debian packages: postgres (a private cluster per test run, made with initdb) and redis.
step_debian() {
    local missing=()
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    ((${#missing[@]})) || return 0
    if [[ "$(id -u)" != 0 ]]; then
        echo "missing Debian packages: ${missing[*]} (apt-get install ${missing[*]})"
        return 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    # The Debian packages start a system-wide server; the tests run their own on free ports.
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now redis-server >/dev/null 2>&1 || true
    fi
}

# A fresh writable copy of the snapshot (without anything a previous build left).
step_copy() {
    [[ -f "$src/package.json" ]] || { echo "no Turbo snapshot at $src"; return 1; }
    rm -rf "$svc"
    mkdir -p "$svc"
    cp -r "$src/." "$svc/"
    chmod -R u+w "$svc"
}

# What the registry here lacks or serves differently, patched in the copy only:
# - @ardrive/ardrive-promise-cache 1.2.0-alpha.6 is not served; 1.4.0 is, and names the TTL
#   option `cacheTTL` where the service passes `cacheTTLMillis` (tsc refuses the unknown key).
# - @aws-sdk/client-ssm 3.529.0 is not served; 3.529.1 is.
# - avsc comes by git URL through arlocal's old arbundles; npm avsc 5.7.7 is the same code.
# - src/jobs/putOffsets.ts builds its client from AWS_ENDPOINT_URL (the others read
#   AWS_ENDPOINT); tests/support/turbo.py sets both, nothing to patch.
step_patch() {
    (
        cd "$svc"
        node -e '
          const fs = require("fs");
          const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
          p.dependencies["@ardrive/ardrive-promise-cache"] = "1.4.0";
          p.dependencies["@aws-sdk/client-ssm"] = "3.529.1";
          p.resolutions = Object.assign({}, p.resolutions, {
            "@ardrive/ardrive-promise-cache": "1.4.0",
            "@aws-sdk/client-ssm": "3.529.1",
            "avsc": "5.7.7",
          });
          fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");
        '
        grep -rl 'cacheTTLMillis' src | xargs sed -i -E 's/\bcacheTTLMillis(\s*):/cacheTTL\1:/g'
    )
}

yarn_env() {
    # The registry npm is configured with; the yarn cache shared by every clone on the machine;
    # the lockfile may change (the resolutions above). sqlite3 (arlocal's, a dev dependency)
    # fetches its prebuilt binary from outside the registries, so it compiles, against the
    # installed node's headers, and against the system libsqlite3 when its header is there
    # (seconds instead of minutes for the bundled amalgamation; tests/nodes/install.sh does
    # the same); other native modules use the prebuilds their packages ship.
    local sqlite=()
    if [[ -n "${npm_config_sqlite:-}" ]]; then
        sqlite=(npm_config_sqlite="$npm_config_sqlite")
    elif [[ -f /usr/include/sqlite3.h ]]; then
        sqlite=(npm_config_sqlite=/usr)
    fi
    env YARN_NPM_REGISTRY_SERVER="$(npm config get registry)" \
        YARN_ENABLE_IMMUTABLE_INSTALLS=false \
        YARN_ENABLE_GLOBAL_CACHE=true \
        YARN_ENABLE_TELEMETRY=0 \
        YARN_ENABLE_PROGRESS_BARS=false \
        YARN_ENABLE_INLINE_BUILDS=true \
        npm_config_nodedir="$(npm config get nodedir)" \
        npm_config_build_from_source=sqlite3 \
        "${sqlite[@]}" \
        "$@"
}

step_yarn_install() {
    (cd "$svc" && yarn_env node .yarn/releases/yarn-3.2.1.cjs install)
}

# tsc emits the JavaScript even when it reports type errors. With promise-cache 1.4.0 it
# reports one kind: the service passes a `metricsConfig` option that 1.4.0's types do not
# declare (the cache ignores it at run time). Those are accepted; any other error fails.
step_build_service() {
    local out rc=0
    out="$(cd "$svc" && rm -rf lib && node node_modules/typescript/bin/tsc \
        --project ./tsconfig.prod.json --pretty false 2>&1)" || rc=$?
    printf '%s\n' "$out"
    if ((rc != 0)); then
        local all known
        all="$(grep -c 'error TS' <<<"$out" || true)"
        known="$(grep -c "error TS2353: .*'metricsConfig' does not exist" <<<"$out" || true)"
        if [[ "$all" == 0 || "$all" != "$known" ]]; then
            echo "tsc: $all error(s), $known of them the known metricsConfig one"
            return 1
        fi
        echo "tsc: $known known metricsConfig type error(s) (promise-cache 1.4.0), accepted"
    fi
    [[ -f "$svc/lib/index.js" ]]
}

step_build_fulfillment() {
    (
        cd "$svc/ecs/fulfillment-pipeline"
        yarn_env node ../../.yarn/releases/yarn-3.2.1.cjs install
        yarn_env node ../../.yarn/releases/yarn-3.2.1.cjs build
    )
    [[ -f "$svc/ecs/fulfillment-pipeline/dist/app.js" ]]
}

STEPS=(debian copy patch yarn_install build_service build_fulfillment)

stamp_key() {
    {
        cat "$src/package.json" "$src/yarn.lock"
        declare -f "${STEPS[@]/#/step_}" yarn_env
        node --version
    } | sha256sum | cut -d' ' -f1
}

command -v node >/dev/null || { echo "turbo_node.sh: node not found (need Node 20 + npm)" >&2; exit 1; }
key="$(stamp_key)"
built="$cache/$key"

# Point .testnodes/turbo/service at the machine's build of this key.
use_build() {
    mkdir -p "$top"
    if [[ -e "$link" && ! -L "$link" ]]; then
        rm -rf "$link"  # a build of the older layout, made inside the clone
    fi
    ln -sfn "$built/service" "$link"
    echo "$key" >"$stamp"
}

if [[ -f "$built/stamp" && "$(cat "$built/stamp")" == "$key" && -f "$built/service/lib/index.js" ]]; then
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" && "$(readlink "$link" 2>/dev/null)" == "$built/service" ]]; then
        echo "  turbo: up to date"
    else
        use_build
        echo "  turbo: linked the machine's build ($built)"
    fi
    exit 0
fi
mkdir -p "$top" "$cache"
if [[ -d "$link" && ! -L "$link" && -f "$stamp" && "$(cat "$stamp")" == "$key" && -f "$link/lib/index.js" ]]; then
    # A build of this key made inside the clone (the older layout): it becomes the machine's.
    rm -rf "$built"
    mkdir -p "$built"
    mv "$link" "$built/service"
    echo "$key" >"$built/stamp"
    use_build
    echo "  turbo: moved this clone's build to $built"
    exit 0
fi
rm -f "$stamp"
: >"$log"
work="$cache/.build-$key-$$"
trap 'rm -rf "$work"' EXIT
svc="$work/service"
echo "  turbo: installing into $built (log: ${log#"$root"/})"
t0=$(date +%s)
for step in "${STEPS[@]}"; do
    s0=$(date +%s)
    set +e
    (
        set -e
        "step_$step"
    ) >>"$log" 2>&1
    rc=$?
    set -e
    s1=$(date +%s)
    if ((rc != 0)); then
        echo "---- last 25 lines of $log ----" >&2
        tail -n 25 "$log" >&2
        echo "----" >&2
        echo "turbo_node.sh: step '$step' failed after $((s1 - s0)) s; log: $log" >&2
        exit 1
    fi
    echo "    $step: $((s1 - s0)) s" | tee -a "$log"
done
# Stamp last, then the whole folder renamed into place: a half-built service is never used.
echo "$key" >"$work/stamp"
rm -rf "$built"
mv "$work" "$built"
trap - EXIT
# Older builds (another key) go; a build another run is making (.build-*) stays.
for old in "$cache"/*; do
    [[ "$old" == "$built" || ! -d "$old" ]] || rm -rf "$old"
done
use_build
echo "  turbo: installed in $(($(date +%s) - t0)) s"
