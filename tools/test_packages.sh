#!/usr/bin/env bash
# Debian packages the tests run for real: chromium (tests/hygiene/test_site_browser.py opens
# every docs page in it), groff (tests/unit/cli/test_completion.py renders the generated man
# page) and zsh + fish (the same test parses their completion scripts and runs fish's). Installed once with apt, as root like CI; `make test` runs this behind its stamp.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v groff >/dev/null 2>&1 || missing+=(groff-base)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages for the tests: ${missing[*]} (apt-get install ${missing[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
