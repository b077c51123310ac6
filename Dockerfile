# budcluster's image: `budcluster serve` by default; the worker (`worker`) and the migration
# (`migrate`) run the same image with another command. Non-root (10001:10001), fit for a
# read-only root filesystem: everything it writes goes under /tmp (HOME, TMPDIR, the data
# directory, helm's cache), an emptyDir in Kubernetes (deploy/helm/budcluster).
#
#   docker build -t budcluster:0.1.0 .
#   docker run --read-only --tmpfs /tmp -p 8000:8000 -e DATABASE_URL=... -e REDIS_URL=... \
#     -e BUDCLUSTER_TOKEN_PEPPER=... -e BUDCLUSTER_KEYS_PEM="$(cat key-1.pem)" budcluster:0.1.0

# --- builder: the project and its pinned runtime dependencies in a virtualenv ---------------
FROM python:3.11-slim AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/budcluster

WORKDIR /src
# The dependencies first (a layer that changes only with the pins), then the code.
COPY deploy/constraints.txt ./deploy/constraints.txt
RUN /opt/budcluster/bin/pip install --requirement deploy/constraints.txt

COPY pyproject.toml README.md ./
COPY domain ./domain
COPY adapters ./adapters
COPY schema ./schema
COPY resolvers ./resolvers
COPY workers ./workers
COPY budcluster ./budcluster
COPY migrations ./migrations
# Not editable, no dev extra: the wheel's files (package data included) go into the venv. Then
# bytecode for everything, checked by hash rather than mtime (COPY --from may not keep mtimes),
# so nothing needs to be written at run time; pip itself is not needed there.
RUN /opt/budcluster/bin/pip install --no-deps --constraint deploy/constraints.txt . \
    && /opt/budcluster/bin/pip check \
    && /opt/budcluster/bin/pip uninstall --yes pip \
    && /opt/budcluster/bin/python -m compileall -q -f -j 0 \
        --invalidation-mode unchecked-hash /opt/budcluster/lib

# --- helm: the binary workers install SERVICE jobs' releases with (pyhelm3) ------------------
FROM python:3.11-slim AS helm

ARG HELM_VERSION=v3.17.3
ARG TARGETARCH=amd64
COPY deploy/docker/fetch_helm.py /tmp/fetch_helm.py
RUN python /tmp/fetch_helm.py "${HELM_VERSION}" "${TARGETARCH}" /usr/local/bin

# --- the image ---------------------------------------------------------------------------------
FROM python:3.11-slim

RUN groupadd --system --gid 10001 budcluster \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin budcluster

COPY --from=builder /opt/budcluster /opt/budcluster
COPY --from=helm /usr/local/bin/helm /usr/local/bin/helm

ENV PATH=/opt/budcluster/bin:$PATH \
    HOME=/tmp \
    TMPDIR=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    XDG_CONFIG_HOME=/tmp/.config \
    XDG_DATA_HOME=/tmp/.local/share \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    BUDCLUSTER_DATA_DIR=/tmp/budcluster \
    BUDCLUSTER_HOST=0.0.0.0 \
    BUDCLUSTER_PORT=8000

# Nothing is written here: the data directory and every temporary file are under /tmp.
WORKDIR /opt/budcluster
USER 10001:10001
EXPOSE 8000

# No HEALTHCHECK: the worker and the migration have no HTTP server. Kubernetes probes the API's
# GET /health (liveness) and GET /ready (readiness) instead.
ENTRYPOINT ["budcluster"]
CMD ["serve"]
