#!/usr/bin/env bash
# Semantic cache: pgvector for PostgreSQL 15 (the Python side, CPU torch included, comes from
# uv.lock). Idempotent and quiet; a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/install.d/_apt.inc
. scripts/install.d/_apt.inc

# pgvector (CREATE EXTENSION vector) for the PostgreSQL-backed vector index. Debian bookworm
# ships no postgresql-15-pgvector, so when apt has none we fetch Debian's own pgvector source
# package from the next release with apt's own client (a private deb-src list derived from this
# machine's apt sources; the system's configuration is not touched), check the upstream
# tarball's SHA-256, and build it against postgresql-server-dev-15.
PG_EXT_DIR=/usr/share/postgresql/15/extension
PGVECTOR_VERSION=0.8.0
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
SOURCE_SUITE=trixie

private_source_list() { # write a deb-src list for $SOURCE_SUITE into $1, from the machine's apt sources
  local out="$1/src.sources"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    # deb822: the first stanza is the main archive; keep its URIs and keyring, change type and suite.
    awk 'BEGIN { RS = ""; ORS = "\n\n" } NR == 1' /etc/apt/sources.list.d/debian.sources \
      | sed -e 's/^Types: .*/Types: deb-src/' -e "s/^Suites: .*/Suites: $SOURCE_SUITE/" > "$out"
  else
    grep -E '^deb [^ ]+ [a-z]+ ' /etc/apt/sources.list | head -1 \
      | awk -v suite="$SOURCE_SUITE" '{ print "deb-src " $2 " " suite " main" }' > "$1/src.list"
  fi
}

if [ -d "$PG_EXT_DIR" ] && [ ! -e "$PG_EXT_DIR/vector.control" ] && command -v apt-get >/dev/null 2>&1; then
  if ! apt_known postgresql-15-pgvector; then apt-get "${APT_OPTS[@]}" update -qq; fi
  if apt_known postgresql-15-pgvector; then
    apt_install postgresql-15-pgvector
  else
    echo "   pgvector $PGVECTOR_VERSION: building Debian's source package against postgresql-server-dev-15 (about a minute)"
    before="$(mktemp)"
    dpkg-query -W -f '${Package}\n' | sort > "$before"
    apt_install postgresql-server-dev-15 make gcc
    build="$(mktemp -d)"
    mkdir -p "$build/apt/parts" "$build/apt/lists/partial"
    private_source_list "$build/apt/parts"
    apt_private=(-o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$build/apt/parts"
                 -o "Dir::State::Lists=$build/apt/lists")
    apt-get -qq "${apt_private[@]}" update
    (cd "$build" && apt-get -qq "${apt_private[@]}" source --download-only "pgvector=${PGVECTOR_VERSION}-1" >/dev/null 2>&1)
    tarball="$build/pgvector_${PGVECTOR_VERSION}.orig.tar.gz"
    echo "$PGVECTOR_SHA256  $tarball" | sha256sum -c --quiet
    tar -xzf "$tarball" -C "$build"
    make -s -C "$build/pgvector-${PGVECTOR_VERSION}" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config OPTFLAGS="" with_llvm=no >/dev/null
    make -s -C "$build/pgvector-${PGVECTOR_VERSION}" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config with_llvm=no install >/dev/null
    # The files it installed, for scripts/uninstall.sh --system.
    mkdir -p "$ACTIONCACHE_DEV_HOME"
    { ls -d "$PG_EXT_DIR"/vector.control "$PG_EXT_DIR"/vector--*.sql "$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir)"/vector.so
      ls -d "$(/usr/lib/postgresql/15/bin/pg_config --includedir-server)"/extension/vector 2>/dev/null || true
    } >> "$ACTIONCACHE_DEV_HOME/files-installed.txt"
    rm -rf "$build"
    # The toolchain was only for this build (postgresql-server-dev-15 pulls clang-14 and llvm-14-dev,
    # about 400 MB): remove exactly the packages this step added.
    mapfile -t added < <(dpkg-query -W -f '${Package}\n' | sort | comm -13 "$before" -)
    rm -f "$before"
    [ ${#added[@]} -eq 0 ] || apt_remove_with_deps "${added[@]}"
  fi
fi
