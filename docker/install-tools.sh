#!/bin/sh
# The command-line tools the compose and docs tests use, from Debian's packages:
#   docker-compose  checks docker-compose.yml (`docker-compose config`; no Docker engine needed)
#   curl, jq        run the curl examples of docs/
#   chromium        renders the planner's /ui page headless (tests/test_ui.py, benchmarks/ui_screenshot.py)
# Installs only what is missing, and only where apt can be used (root with apt-get);
# elsewhere it says what is missing and the tests that need it skip, naming it.
set -u
missing=""
for tool in docker-compose curl jq chromium; do
    command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] && exit 0
if ! command -v apt-get > /dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "note: missing$missing, and apt-get cannot be used here (not root, or no apt); the tests that need them will skip." >&2
    exit 0
fi
echo "installing$missing from Debian's packages"
# shellcheck disable=SC2086
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing > /dev/null; then
    apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing > /dev/null || {
        echo "error: apt-get could not install$missing" >&2
        exit 1
    }
fi
