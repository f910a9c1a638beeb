# The hetsched planning service (`hetsched serve`) for docker-compose.yml.
# Build context: the repository root (see .dockerignore).
FROM python:3.11-slim

# The virtualenv sits at the same path as in docker/supervisor.Dockerfile; a topology submitted from
# this container (`hetsched submit`) names `streamparse_run`, which the supervisors find on their PATH.
ENV VIRTUAL_ENV=/opt/hetsched/venv \
    PATH=/opt/hetsched/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv "$VIRTUAL_ENV" && pip install -q "setuptools<82" wheel

WORKDIR /opt/hetsched/src
COPY . .
RUN pip install -q . && hetsched --help > /dev/null

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
