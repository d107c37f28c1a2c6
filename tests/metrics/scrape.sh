# shellcheck shell=bash
# Reading the relay's HTTP endpoint in a test: sourced after engine_lib.sh (fail,
# sql), with MC (the metrics_client executable) and PORT set.

# get PATH: "STATUS" on the first line, then the body
get() { "$MC" get "$PORT" GET "$1"; }
scrape() { get /metrics >"$1"; [ "$(head -1 "$1")" = 200 ] || fail "GET /metrics: $(head -3 "$1")"; }
# value SCRAPE_FILE SERIES: the sample of SERIES (name with its labels, exact)
value() {
    local v
    v=$(awk -v s="$2" '$1 == s { print $2 }' "$1")
    [ -n "$v" ] || fail "no series $2 in $1"
    echo "$v"
}
# Every histogram series: buckets never decrease and _count = the +Inf bucket.
check_histograms() {
    awk '
        /^#/ { next }
        /_bucket\{/ { key = $1; sub(/,le="[^"]*"\}$/, "}", key); sub(/_bucket\{/, "{", key)
                      if (key == last && $2 < prev) { print "decreasing bucket: " $0; bad = 1 }
                      last = key; prev = $2; if ($1 ~ /le="\+Inf"/) inf[key] = $2; next }
        /_count\{/ { key = $1; sub(/_count\{/, "{", key); counts++
                     if (!(key in inf) || inf[key] != $2) { print "count " $2 " != +Inf bucket " inf[key] " for " key; bad = 1 } }
        END { if (!counts) { print "no histogram"; bad = 1 } exit bad }' "$1" || fail "histograms in $1 are inconsistent"
}
# scrape_until SQL VALUE WHY: while the relay (RELAY) runs, scrape /metrics every
# 50 ms and check its histograms until SQL returns VALUE; fails with WHY after
# 3,000 scrapes. SCRAPES: how many were taken.
scrape_until() {
    SCRAPES=0
    while [ "$(sql "$1")" != "$2" ]; do
        kill -0 "$RELAY" 2>/dev/null || fail "the relay exited"
        SCRAPES=$((SCRAPES + 1))
        [ "$SCRAPES" -lt 3000 ] || fail "$3"
        scrape "$WORK/during.txt"
        check_histograms "$WORK/during.txt"
        sleep 0.05
    done
}
