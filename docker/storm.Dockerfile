# Storm 2.8 for docker-compose.yml: ZooKeeper, Nimbus and the supervisors (and the workers they start).
# Build context (made by cluster/compose_images.py, `hetsched cluster up --compose`):
#   storm-home/                  STORM_HOME as cluster/storm_home.py assembles it from Maven Central
#   hetsched-storm-plugin.jar    the plugin (mvn -f storm-plugin/pom.xml package)
#   wheels/                      streamparse and its dependencies (pip wheel on the host)
# No step needs the network.
ARG BASE_IMAGE=hetsched-base:bookworm
FROM ${BASE_IMAGE}

RUN useradd --uid 1000 --user-group --create-home storm \
    && mkdir -p /data /logs \
    && chown storm:storm /data /logs

# The workers' Python components run `streamparse_run`, found on the PATH a supervisor passes on to its workers.
ENV VIRTUAL_ENV=/opt/hetsched/venv \
    PATH=/opt/hetsched/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1
COPY wheels /tmp/wheels
# The same pins as pyproject.toml (streamparse 5.0.1 imports pkg_resources, gone in setuptools 82).
RUN python3 -m venv "$VIRTUAL_ENV" \
    && pip install -q --no-index --find-links /tmp/wheels "setuptools<82" "streamparse==5.0.1" \
    && rm -rf /tmp/wheels \
    && streamparse_run --help > /dev/null

COPY storm-home /apache-storm
# The scheduler (Nimbus's class path) and the metrics task hook (the workers' class path).
COPY hetsched-storm-plugin.jar /apache-storm/extlib-daemon/hetsched-storm-plugin.jar
COPY hetsched-storm-plugin.jar /apache-storm/extlib/hetsched-storm-plugin.jar

USER storm
WORKDIR /home/storm
