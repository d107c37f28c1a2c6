# shellcheck shell=bash
# A private PostgreSQL instance for a benchmark that restarts it or changes
# its settings, made and removed by the benchmark. Sourced after setting
# SERVICES (tests/services/services.sh), PGF_PORT, PGF_DIR and fail(); the psql
# environment then points at it.
pgf() { SVC_DIR=$PGF_DIR PG_PORT=$PGF_PORT bash "$SERVICES" "$@"; }
export PGHOST=127.0.0.1 PGPORT=$PGF_PORT PGUSER=postgres PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"
private_pg_up() {
    [ -e "$PGF_DIR" ] && fail "$PGF_DIR exists: another run, or a leftover to remove"
    pgf pg-start
}
# the whole instance goes, its databases and slots with it
private_pg_down() {
    pgf pg-stop >/dev/null 2>&1
    rm -rf "$PGF_DIR"
}
