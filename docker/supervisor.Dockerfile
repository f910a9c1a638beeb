# A Storm supervisor for docker-compose.yml: the official Storm image plus a Python virtualenv with
# streamparse, in which the topologies' Python spouts and bolts run
# (their command is `streamparse_run`, found on the worker's PATH, which a supervisor passes to its workers).
ARG STORM_IMAGE=storm:2.8.3
FROM ${STORM_IMAGE}

USER root
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv; \
    rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/hetsched/venv \
    PATH=/opt/hetsched/venv/bin:$PATH
# The same pins as pyproject.toml (streamparse 5.0.1 imports pkg_resources, gone in setuptools 82).
RUN python3 -m venv "$VIRTUAL_ENV" \
    && "$VIRTUAL_ENV/bin/pip" install --no-cache-dir -q "setuptools<82" "streamparse==5.0.1" \
    && "$VIRTUAL_ENV/bin/streamparse_run" --help > /dev/null
