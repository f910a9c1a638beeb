# The hetsched planning service (`hetsched serve`) for docker-compose.yml: the core install only
# (planner, service, command line; no PySpark, streamparse or matplotlib).
# Build context: the repository root (see .dockerignore).
FROM python:3.11-slim

# Extras to add, e.g. `docker compose build --build-arg HETSCHED_EXTRAS=topologies planner` to submit
# topologies from this container (docs/docker-compose.md).
ARG HETSCHED_EXTRAS=""

# The virtualenv sits at the same path as in docker/supervisor.Dockerfile; a topology submitted from
# this container (`hetsched submit`, with the topologies extra) names `streamparse_run`, which the
# supervisors find on their PATH.
ENV VIRTUAL_ENV=/opt/hetsched/venv \
    PATH=/opt/hetsched/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv "$VIRTUAL_ENV"

WORKDIR /opt/hetsched/src
COPY . .
# Without extras the build fails if one of theirs came in with the core.
RUN pip install -q ".${HETSCHED_EXTRAS:+[$HETSCHED_EXTRAS]}" \
    && hetsched --help > /dev/null \
    && { [ -n "$HETSCHED_EXTRAS" ] || python -c "import importlib.util as u, sys; found = [m for m in ('pyspark', 'streamparse', 'matplotlib') if u.find_spec(m)]; sys.exit(f'extras in the core install: {found}' if found else 0)"; }

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
# loopback only. Set HETSCHED_PLANNER_TOKEN to require a Bearer token on /v1.
CMD ["hetsched", "serve", "--host", "0.0.0.0", "--port", "8765"]
