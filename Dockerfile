# syntax=docker/dockerfile:1
#
# perfdash: one image for every role; docker-compose.yml picks the role with `command:`.
#
#   docker build -t perfdash .                              # API, dashboard, ingest worker
#   docker build -t perfdash-gpu --build-arg EXTRAS=bench . # GPU worker (adds torch)
#
# The default build has no torch: the `bench` extra is only installed through EXTRAS.

FROM python:3.11-slim

# Extras of the perfdash distribution to install, comma-separated (e.g. "bench").
ARG EXTRAS=""

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PERFDASH_DATA_DIR=/data

# Fixed ids, so every image built from this file (with or without EXTRAS) owns the
# shared /data volume the same way. Named volumes mounted at /data start as a copy of
# this folder, owner included, so the non-root user can write blobs there.
RUN groupadd --system --gid 10001 perfdash \
 && useradd --system --uid 10001 --gid perfdash --create-home --home-dir /home/perfdash \
        --shell /usr/sbin/nologin perfdash \
 && mkdir -p /data/blobs \
 && chown -R perfdash:perfdash /data

WORKDIR /src

# 1. Dependencies only, in a layer of their own, so that a code change does not
#    reinstall them (the bench extra is gigabytes). The packages are empty stand-ins
#    until step 2 replaces them.
COPY pyproject.toml README.md* ./
RUN mkdir ingest backend workers dashboard \
 && touch ingest/__init__.py backend/__init__.py workers/__init__.py dashboard/__init__.py \
 && pip install ".${EXTRAS:+[${EXTRAS}]}" \
 && rm -rf ingest backend workers dashboard build ./*.egg-info

# 2. The project itself (non-editable, so the sources can go afterwards).
COPY ingest/ ingest/
COPY backend/ backend/
COPY workers/ workers/
COPY dashboard/ dashboard/
RUN pip install --no-deps --force-reinstall . \
 && cd / \
 && rm -rf /src

WORKDIR /home/perfdash
USER 10001:10001

EXPOSE 8000

CMD ["perfdash", "serve", "--host", "0.0.0.0", "--no-worker"]
