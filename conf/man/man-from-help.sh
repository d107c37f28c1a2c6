#!/bin/sh
# man-from-help.sh BINARY [OUT]   (OUT defaults to stdout)
# Writes the man page (roff) from the relay's own --help --all and --version, so the
# page never drifts from the program. Layout of --help it relies on: a
# "usage:" line, a description paragraph, "Heading:" lines, and entries
# indented by two spaces whose description starts in a later column.
set -eu
bin=$1
[ $# -lt 2 ] || exec >"$2"
version=$("$bin" --version | awk 'NR == 1 { print $2 }')
"$bin" --help --all | awk -v version="$version" '
function esc(s) {                     # roff: backslash, hyphen, leading dot
    gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
function flush_term() { if (term != "") { print ".TP"; print "\\fB" esc(term) "\\fR"; term = "" } }
BEGIN {
    print ".TH OUTBOX\\-RELAY 1 \"\" \"outbox-relay " version "\" \"User Commands\""
    print ".nh"; print ".SH NAME"
    print "outbox\\-relay \\- transactional\\-outbox relay from PostgreSQL to brokers"
    section = "synopsis"
}
/^usage: / { sub(/^usage: /, ""); print ".SH SYNOPSIS"; print esc($0); print ".SH DESCRIPTION"; next }
/^$/ { flush_term(); if (section == "text") print ".PP"; next }
/^Options of [a-z-]+:$/ {             # the options of one command: a subsection
    flush_term(); sub(/:$/, ""); print ".SS " $0; section = "entries"; next
}
/^[A-Z][A-Za-z ]*:$/ {                # a heading of entries
    flush_term(); sub(/:$/, ""); print ".SH " toupper($0); section = "entries"; next
}
/^[A-Z][A-Za-z ]*: / {                # a heading with its text on the same line
    flush_term(); h = $0; sub(/: .*/, "", h); t = $0; sub(/^[^:]*: /, "", t)
    print ".SH " toupper(h); print esc(t); section = "text"; next
}
section == "entries" && /^  [^ ]/ {   # an entry: term, then its description after 2+ spaces
    flush_term(); line = substr($0, 3)
    if (match(line, /  +/)) {
        term = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH)
        if (!desc_col) desc_col = 2 + RSTART + RLENGTH
        flush_term(); print esc(desc)
    } else term = line
    next
}
section == "entries" && /^   / {      # continuation: of the term, or of the description
    match($0, /^ +/)
    if (RLENGTH + 1 < desc_col) { term = term " " substr($0, RLENGTH + 1); next }
    flush_term(); print esc(substr($0, RLENGTH + 1)); next
}
{ flush_term(); if (section == "synopsis") section = "text"; print esc($0) }
END {
    flush_term()
    print ".SH FILES"
    print ".TP"
    print "\\fI/etc/outbox\\-relay/NAME.conf\\fR"
    print "the config of the service instance \\fBoutbox\\-relay@NAME\\fR; secrets go in"
    print "\\fI/etc/outbox\\-relay/NAME.env\\fR (its EnvironmentFile), read as \\fB${VAR}\\fR in the config"
    print ".TP"
    print "\\fI/usr/share/doc/outbox\\-relay/examples/\\fR"
    print "example configs, one per broker"
    print ".SH SIGNALS"
    print "SIGTERM and SIGINT stop claiming, wait for the acknowledgements in flight up to"
    print "\\fBshutdown_timeout_ms\\fR, record them and exit. SIGHUP re\\-reads the config file"
    print "(\\fBoutbox\\-relay reload\\fR sends it)."
    print ".SH SEE ALSO"
    print "\\fI/usr/share/doc/outbox\\-relay/README.md\\fR, \\fBsystemctl\\fR(1)"
}'
