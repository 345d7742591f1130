#!/usr/bin/env bash
# Makes sure the Postgres the tests use answers: DSTACK_TEST_POSTGRES_URL, default
# postgresql://postgres@127.0.0.1:5432/test. Used by CI before the tests, which then run every
# database test on Postgres as well as SQLite (under CI=true an unreachable Postgres fails them).
#
# For the default local URL it installs PostgreSQL from Debian when it is missing, starts the
# first cluster, lets loopback connect without a password (trust, as the tests expect) and
# creates the `test` database. Any other URL must already answer: it is only checked.
# Env: DSTACK_TEST_POSTGRES_URL, POSTGRES_WAIT_SECONDS (default 30).
set -euo pipefail

default_url="postgresql://postgres@127.0.0.1:5432/test"
url="${DSTACK_TEST_POSTGRES_URL:-$default_url}"
wait_seconds="${POSTGRES_WAIT_SECONDS:-30}"

fail() {
  echo "ensure-postgres: $*" >&2
  exit 1
}

answers() {
  command -v psql >/dev/null 2>&1 && psql "$url" -Atqc 'select 1' >/dev/null 2>&1
}

if answers; then
  echo "ensure-postgres: Postgres answers at ${url%%\?*}" >&2
  exit 0
fi
[ "$url" = "$default_url" ] || fail "Postgres does not answer at $url (DSTACK_TEST_POSTGRES_URL)"

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || fail "Postgres does not answer at $url and setting it up needs root"
  as_root=(sudo -n)
fi

if ! command -v pg_lsclusters >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || fail "PostgreSQL is not installed and apt-get is not available"
  echo "ensure-postgres: installing postgresql with apt-get" >&2
  "${as_root[@]}" apt-get update -qq >/dev/null 2>&1 || true
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
    || fail "apt-get install postgresql failed"
fi

read -r version cluster < <(pg_lsclusters --no-header | awk 'NR == 1 { print $1, $2 }')
[ -n "${version:-}" ] || fail "no PostgreSQL cluster exists (pg_lsclusters lists none)"
hba="/etc/postgresql/$version/$cluster/pg_hba.conf"
if ! "${as_root[@]}" grep -Eq '^host[[:space:]]+all[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
  # First match wins in pg_hba.conf: the trust line goes on top.
  "${as_root[@]}" sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
fi
"${as_root[@]}" pg_ctlcluster "$version" "$cluster" start 2>/dev/null \
  || "${as_root[@]}" pg_ctlcluster "$version" "$cluster" reload

waited=0
until pg_isready -h 127.0.0.1 -p 5432 -q; do
  [ "$waited" -lt "$wait_seconds" ] || fail "Postgres did not answer on 127.0.0.1:5432 within ${wait_seconds}s"
  sleep 1
  waited=$((waited + 1))
done
if ! psql -h 127.0.0.1 -U postgres -Atqc "select 1 from pg_database where datname = 'test'" | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -qc 'create database test'
fi
answers || fail "Postgres still does not answer at $url"
echo "ensure-postgres: Postgres answers at $url" >&2
