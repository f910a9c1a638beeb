#!/bin/sh
# The command-line tools the compose and docs tests use, from Debian's packages:
#   docker-compose  checks docker-compose.yml (`docker-compose config`) and runs the compose cluster
#   docker.io       the Docker engine (dockerd) the compose cluster runs on (tests/test_compose_live.py);
#                   where no service manager starts it, `hetsched cluster up --compose` does (docker/start-dockerd.sh)
#   debootstrap     makes the base image from Debian's packages (docker/build-base.sh)
#   curl, jq        run the curl examples of docs/
#   chromium        renders the planner's /ui page headless (tests/test_ui.py, benchmarks/ui_screenshot.py)
# Installs only what is missing, and only where apt can be used (root with apt-get);
# elsewhere it says what is missing and the tests that need it skip, naming it.
set -u
missing=""
# tool:package
for pair in docker-compose:docker-compose dockerd:docker.io debootstrap:debootstrap curl:curl jq:jq chromium:chromium; do
    tool=${pair%%:*}
    # dockerd and debootstrap live in sbin, which a user's PATH may lack
    command -v "$tool" > /dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || [ -x "/usr/bin/$tool" ] || missing="$missing ${pair#*:}"
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
