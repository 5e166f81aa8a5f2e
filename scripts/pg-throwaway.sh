#!/usr/bin/env bash
# Start or stop a throwaway PostgreSQL cluster on loopback (trust auth), for tests and benchmarks.
#   scripts/pg-throwaway.sh start DIR PORT   -> prints the URL of database "inquitree" as its writer role
#   scripts/pg-throwaway.sh stop DIR
# The database is set up with `inquitree db grant` (owner, writer and reader roles) by the Python
# in $INQUITREE_PYTHON (default .venv/bin/python); the administrator's URL is left in DIR/admin-url.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?cluster directory}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -n "$pgbin" ] || { echo "pg-throwaway: no PostgreSQL server found under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    port=${3:-55432}
    mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_pg "$pgbin/initdb" -D "$dir/data" -U postgres --auth=trust >"$dir/initdb.log" 2>&1
    as_pg "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null
    as_pg "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres inquitree
    admin="postgresql+psycopg://postgres@127.0.0.1:$port/inquitree"
    echo "$admin" >"$dir/admin-url"
    py=${INQUITREE_PYTHON:-.venv/bin/python}
    "$py" -m inquitree db grant --db "$admin" >"$dir/roles" || { echo "pg-throwaway: inquitree db grant failed (is InquiTree installed in $py?)" >&2; exit 1; }
    awk -F'\t' '$1 == "writer" {print $2}' "$dir/roles"
    ;;
  stop)
    as_pg "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
