#!/bin/sh
# Start a Docker engine where none answers, for machines without a service manager (no systemd):
# `dockerd --iptables=false` in the background, then wait until its socket answers.
# --iptables=false: the engine adds no NAT or forwarding rules to the host, so containers reach only
# each other on the networks a compose project makes (published ports go through docker-proxy).
# Where a service manager runs Docker (systemctl start docker), this script finds it running and does nothing.
# Usage: sh docker/start-dockerd.sh [log file]   (default /var/log/hetsched-dockerd.log)
set -u
log=${1:-/var/log/hetsched-dockerd.log}
wait_s=${HETSCHED_DOCKERD_WAIT_S:-60}
if docker info > /dev/null 2>&1; then
    exit 0
fi
if ! command -v dockerd > /dev/null 2>&1; then
    echo "error: no Docker engine answers and dockerd is not installed (apt-get install docker.io, or make setup)." >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "error: no Docker engine answers, and starting dockerd needs root (run this script as root, or start Docker's service)." >&2
    exit 1
fi
echo "starting dockerd --iptables=false (log: $log)"
# setsid: the engine outlives the shell that started it and its terminal.
setsid dockerd --iptables=false >> "$log" 2>&1 < /dev/null &
i=0
while [ "$i" -lt "$wait_s" ]; do
    if docker info > /dev/null 2>&1; then
        echo "dockerd answers after ${i} s"
        exit 0
    fi
    sleep 1
    i=$((i + 1))
done
echo "error: dockerd did not answer within ${wait_s} s; see $log" >&2
exit 1
