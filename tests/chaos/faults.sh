# faults.sh: the chaos suite's fault injector; source it from run.sh.
# Needs WORK (relay.N.pid files of the supervised relays), SERVICES, LEASE_S
# and FAULT_LOG. fault_inject BROKER lands one fault picked at random (relay,
# PostgreSQL or the broker in use) and logs
#   unix_ms when it began <tab> kind <tab> detail <tab> ms until it was undone
# PG_FAULTS=0 leaves PostgreSQL alone (another run injects those); with
# PG_SHARED_LOG set, PostgreSQL faults are logged there too, for the others.

fault_log() { FAULT_AT=$(date +%s%3N) FAULT_KIND=$1 FAULT_DETAIL=${2:-}; }
fault_done() {
    local line
    line=$(printf '%s\t%s\t%s\t%s' "$FAULT_AT" "$FAULT_KIND" "$FAULT_DETAIL" $(($(date +%s%3N) - FAULT_AT)))
    echo "$line" >> "$FAULT_LOG"
    [[ $FAULT_KIND != pg-* || -z ${PG_SHARED_LOG:-} ]] || echo "$line" >> "$PG_SHARED_LOG"
}
svc() { "$SERVICES" "$@" >> "$WORK/services.log" 2>&1; }

# a relay process (one of the supervised slots) that is running now
relay_pid() {
    local slot=$((RANDOM % RELAYS)) pid
    pid=$(cat "$WORK/relay.$slot.pid" 2>/dev/null) || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$slot $pid"
}

fault_relay() { # kill|stop|term
    local sp
    sp=$(relay_pid) || { sleep 0.3; sp=$(relay_pid) || return 1; }
    set -- "$1" ${sp}
    case $1 in
    kill) fault_log relay-kill "slot $2"; kill -KILL "$3" ;;
    term) fault_log relay-term "slot $2"; kill -TERM "$3" ;;
    stop) # past the lease: the other relay takes the rows over, then this one wakes
        fault_log relay-stop "slot $2 for $((LEASE_S + 1)) s"
        kill -STOP "$3"; sleep $((LEASE_S + 1)); kill -CONT "$3" ;;
    esac
}

fault_pg() { # restart|crash
    case $1 in
    restart) fault_log pg-restart fast; svc pg-restart ;;
    crash) fault_log pg-crash immediate; svc pg-crash; sleep 0.$((RANDOM % 9 + 1)); svc pg-start ;;
    esac
}

fault_broker() { # BROKER
    local pause=$((1 + RANDOM % 3))
    case $1:$((RANDOM % 3)) in
    kafka:0 | kafka:1)
        # the run's own mock cluster: SIGUSR1 refuses connections, SIGUSR2 accepts again
        fault_log kafka-down "${pause} s"; kill -USR1 "$KMOCK_PID"; sleep "$pause"; kill -USR2 "$KMOCK_PID" ;;
    kafka:2) # a broker that hangs (no answer at all, connections stay open)
        fault_log kafka-hang "${pause} s"; kill -STOP "$KMOCK_PID"; sleep "$pause"; kill -CONT "$KMOCK_PID" ;;
    rabbitmq:0) fault_log rmq-drop-conns; svc rmq-drop-conns ;;
    rabbitmq:1)
        if ((RANDOM % 4)); then
            fault_log rmq-restart "stop_app/start_app"; svc rmq-stop-app; sleep 0.5; svc rmq-start-app
        else
            fault_log rmq-restart "broker process"; svc rmq-restart
        fi ;;
    rabbitmq:2) # a killed broker takes 10-20 s to come back: half as often as the others
        if ((RANDOM % 2)); then fault_log rmq-kill SIGKILL; svc rmq-kill; svc rmq-start
        else fault_log rmq-drop-conns; svc rmq-drop-conns; fi ;;
    mqtt:0 | mqtt:1) fault_log mqtt-restart "graceful, ${pause} s down"; svc mqtt-stop; sleep "$pause"; MQ_PERSIST=true svc mqtt-start ;;
    mqtt:2)
        fault_log mqtt-hang "${pause} s"; kill -STOP "$(cat "$SVC_DIR/mosquitto/mosquitto.pid")"
        sleep "$pause"; kill -CONT "$(cat "$SVC_DIR/mosquitto/mosquitto.pid")" ;;
    esac
}

# one fault: 45% relay, 15% PostgreSQL, 40% the broker
fault_inject() {
    local r=$((RANDOM % 20))
    [ "${PG_FAULTS:-1}" = 1 ] || ((r < 9 || r >= 12)) || r=12
    if ((r < 4)); then fault_relay kill
    elif ((r < 7)); then fault_relay stop
    elif ((r < 9)); then fault_relay term
    elif ((r < 11)); then fault_pg restart
    elif ((r < 12)); then fault_pg crash
    else fault_broker "$1"
    fi || return 1
    fault_done
}
