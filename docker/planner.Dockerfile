# The hetsched planning service (`hetsched serve`) for docker-compose.yml: the core install only
# (planner, service, command line; no PySpark, streamparse or matplotlib).
# Build context (made by cluster/compose_images.py): wheels/ with the hetsched wheel of this checkout
# and its dependencies (pip wheel on the host). No step needs the network.
ARG BASE_IMAGE=hetsched-base:bookworm
FROM ${BASE_IMAGE}

ENV VIRTUAL_ENV=/opt/hetsched/venv \
    PATH=/opt/hetsched/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

COPY wheels /tmp/wheels
# The build fails if an extra's package came in with the core.
RUN python3 -m venv "$VIRTUAL_ENV" \
    && pip install -q --no-index --find-links /tmp/wheels hetsched \
    && rm -rf /tmp/wheels \
    && hetsched --help > /dev/null \
    && python -c "import importlib.util as u, sys; found = [m for m in ('pyspark', 'streamparse', 'matplotlib') if u.find_spec(m)]; sys.exit(f'extras in the core install: {found}' if found else 0)"

RUN useradd --system --create-home --uid 1001 hetsched \
    && mkdir -p /var/lib/hetsched \
    && chown hetsched /var/lib/hetsched
USER hetsched
WORKDIR /home/hetsched

# Plans and profile sets live here (a named volume in docker-compose.yml).
ENV HETSCHED_DB=/var/lib/hetsched/hetsched.db
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=5s --retries=6 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=3)"

# Listens on every address of the container; docker-compose.yml publishes the port on the host's
# loopback only. The token comes from a compose secret (HETSCHED_PLANNER_TOKEN_FILE).
CMD ["hetsched", "serve", "--host", "0.0.0.0", "--port", "8765"]
