# shellcheck shell=bash
# The relay config of the benchmarks that run it beside producers (real
# shape, pressure phases, flat cost): database $DB at $PGHOST:$PGPORT, 2
# workers, batch 500, ordering aggregate, the memory driver, metrics on
# 127.0.0.1. Sourced; needs DB and OBX_DRIVERS.
#
#   memory_relay_cfg FILE SOURCE RETENTION METRICS_PORT [MEMORY_OPTIONS]
memory_relay_cfg() {
    local src=""
    [ "$2" = wal ] && src="source = \"wal\"; wal = { slot = \"${DB}_slot\"; };"
    [ "$2" = cursor ] && src="source = \"cursor\";"
    cat >"$1" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; retention = "$3";
          drivers_dir = "$OBX_DRIVERS"; $src };
log = { level = "warn"; };
metrics = { listen = "127.0.0.1:$4"; };
outputs = ( { name = "out"; driver = "memory"; options = { ${5:-} }; } );
routes = ( { output = "out"; destination = "bench"; } );
CFG
}
