#!/bin/sh
# The base image of every hetsched image, from Debian's packages only (no registry):
# a minimal Debian bookworm made with debootstrap, with OpenJDK 17 (Storm), Python 3 (streamparse,
# the planner) and procps (Storm's supervisor runs `ps` and `kill`), imported with `docker import`.
# Usage: sh docker/build-base.sh IMAGE [MIRROR] [INPUTS]
#   INPUTS goes into the label org.hetsched.inputs (cluster/compose_images.py: built again only when it changes).
#   MIRROR (empty: the default) defaults to the first deb.debian.org-style URI of this machine's apt sources, else
#   http://deb.debian.org/debian. Runs under nice/ionice: other work on the host goes first.
set -eu
image=${1:?usage: build-base.sh IMAGE [MIRROR] [INPUTS]}
mirror=${2:-}
inputs=${3:-}
if [ -z "$mirror" ]; then
    mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
        | awk '{print $2}' | head -n 1)
    mirror=${mirror:-http://deb.debian.org/debian}
fi
command -v debootstrap > /dev/null 2>&1 || { echo "error: debootstrap is not installed (apt-get install debootstrap, or make setup)." >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "error: debootstrap needs root." >&2; exit 1; }
work=$(mktemp -d /var/tmp/hetsched-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "debootstrap bookworm from $mirror into $work"
nice -n 19 ionice -c3 debootstrap --variant=minbase \
    --include=openjdk-17-jre-headless,python3,python3-venv,procps,ca-certificates \
    bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    echo "error: debootstrap failed (log above)." >&2
    exit 1
}
# What an image does not need: package lists and caches, docs, man pages.
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin "$work/rootfs/var/cache/apt/archives/"*.deb \
    "$work/rootfs/usr/share/doc/"* "$work/rootfs/usr/share/man/"*
nice -n 19 ionice -c3 tar -C "$work/rootfs" -c . | nice -n 19 docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL org.hetsched.inputs=$inputs" \
    - "$image" > /dev/null
echo "built $image"
