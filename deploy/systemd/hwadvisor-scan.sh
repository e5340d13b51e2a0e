#!/bin/sh
# hwadvisor-scan: one detection-only scan of this host, run by hwadvisor-scan.service (installed
# as /usr/local/libexec/hwadvisor-scan; see docs/fleet.md, "systemd timer").
#
# 1. `hwadvisor scan --json - --no-bench` under a time limit, into a temporary file beside the
#    profile, renamed over HWADVISOR_STATE_DIR/profile.json once the scan has finished: mode
#    0600 (the profile holds serial numbers). Exit 3 of the scan (a degraded probe) counts as a
#    profile. A failed scan leaves the last profile as it was.
# 2. With HWADVISOR_SHARED_DIR: a copy as <dir>/<name>.json, atomically (a temporary file in
#    that folder, renamed), so that a collector reading the folder never sees half a file.
# 3. With HWADVISOR_UPLOAD_COMMAND: that command, run by sh with the profile as $1 and the name
#    as $2 (e.g. 'aws s3 cp "$1" "s3://inventory/hwadvisor/$2.json"').
#
# Settings (environment, usually from /etc/hwadvisor/hwadvisor.env):
#   HWADVISOR_COMMAND         the hwadvisor command (default: hwadvisor on PATH)
#   HWADVISOR_SCAN_ARGS       more scan arguments, as words (e.g. "--probe-timeout 30")
#   HWADVISOR_SCAN_TIMEOUT    time limit of the scan in seconds (default 600)
#   HWADVISOR_STATE_DIR       the profile's folder (default: $STATE_DIRECTORY, /var/lib/hwadvisor)
#   HWADVISOR_NAME            the name of the shared copy (default: the host name, uname -n)
#   HWADVISOR_SHARED_DIR      a shared folder (NFS, ...) for <name>.json; empty: none
#   HWADVISOR_SHARED_MODE     the shared copy's mode (default 0600; 0640 with a setgid folder of
#                             the collector's group lets that group read it)
#   HWADVISOR_UPLOAD_COMMAND  a command for object storage; empty: none
#   HWADVISOR_UPLOAD_TIMEOUT  its time limit in seconds (default 300)
# The scan itself also reads HWADVISOR_LABELS, HWADVISOR_TORCH_PYTHON, HWADVISOR_REDACT_SALT.
#
# Exit status: 0 when the profile was written (and copied and uploaded where asked), else the
# scan's status (124: it did not finish in time; 127: no hwadvisor), 4 when the profile or the
# shared copy could not be written, the upload command's status when it failed. One line on
# standard error says what happened (the journal keeps it).

set -fu # -f: HWADVISOR_SCAN_ARGS is split into words, never globbed
umask 077

say() {
    echo "hwadvisor-scan: $*" >&2
}

is_count() {
    case "$1" in
        "" | *[!0-9]* | 0*) return 1 ;;
    esac
}

hwadvisor=${HWADVISOR_COMMAND:-hwadvisor}
limit=${HWADVISOR_SCAN_TIMEOUT:-600}
upload_limit=${HWADVISOR_UPLOAD_TIMEOUT:-300}
state=${HWADVISOR_STATE_DIR:-${STATE_DIRECTORY:-/var/lib/hwadvisor}}
state=${state%%:*} # systemd lists several StateDirectory= folders with ':'
shared=${HWADVISOR_SHARED_DIR:-}
shared_mode=${HWADVISOR_SHARED_MODE:-0600}
upload=${HWADVISOR_UPLOAD_COMMAND:-}
name=${HWADVISOR_NAME:-$(uname -n)}

is_count "$limit" || { say "HWADVISOR_SCAN_TIMEOUT must be a whole number of seconds, got '$limit'"; exit 2; }
is_count "$upload_limit" ||
    { say "HWADVISOR_UPLOAD_TIMEOUT must be a whole number of seconds, got '$upload_limit'"; exit 2; }
case "$shared_mode" in
    0[0-7][0-7][0-7] | [0-7][0-7][0-7]) ;;
    *) say "HWADVISOR_SHARED_MODE must be an octal file mode such as 0640, got '$shared_mode'"; exit 2 ;;
esac
case "$name" in
    "" | . | .. | .* | */*) say "cannot name the shared copy '$name': set HWADVISOR_NAME"; exit 2 ;;
esac

profile=$state/profile.json
tmp=$state/.profile.json.$$
shared_tmp=""
# shellcheck disable=SC2329  # called by the EXIT trap
cleanup() {
    rm -f -- "$tmp"
    [ -z "$shared_tmp" ] || rm -f -- "$shared_tmp"
}
trap cleanup EXIT
# SIGTERM (systemctl stop, shutdown) or SIGINT: stop what runs, exit 143 or 130 at once.
child=""
# shellcheck disable=SC2329  # called by the TERM and INT traps
stop() {
    if [ -n "$child" ]; then
        kill -TERM "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    exit "$1"
}
trap 'stop 143' TERM
trap 'stop 130' INT
# Runs "$@" in the background and waits for it, so that a signal is handled at once (a
# foreground command would hold the trap until it ends). Returns the command's status.
run() {
    "$@" &
    child=$!
    wait "$child"
    status=$?
    child=""
    return "$status"
}

mkdir -p -- "$state" || { say "cannot create $state"; exit 4; }

# 1. The scan. HWADVISOR_SCAN_ARGS is a list of words.
# shellcheck disable=SC2086
run timeout --signal=TERM --kill-after=30 "$limit" "$hwadvisor" scan --json - --no-bench \
    ${HWADVISOR_SCAN_ARGS:-} >"$tmp"
rc=$?
if { [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; } || [ ! -s "$tmp" ]; then
    case $rc in
        0 | 3) why="exit $rc but no profile on standard output" ;;
        124) why="it did not finish within $limit s" ;;
        126 | 127) why="cannot run $hwadvisor (exit $rc)" ;;
        *) why="exit $rc" ;;
    esac
    say "scan failed ($why): $profile not updated"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] && exit "$rc"
    exit 1
fi
if ! { chmod 0600 -- "$tmp" && mv -f -- "$tmp" "$profile"; }; then
    say "cannot write $profile"
    exit 4
fi
note=""
[ "$rc" -eq 3 ] && note=" (exit 3: a probe was degraded, see diagnostics.probes)"
say "profile written to $profile$note"

# 2. The shared folder.
if [ -n "$shared" ]; then
    shared_tmp=$shared/.$name.json.$$
    if cp -- "$profile" "$shared_tmp" && chmod "$shared_mode" -- "$shared_tmp" &&
        mv -f -- "$shared_tmp" "$shared/$name.json"; then
        shared_tmp=""
        say "copied to $shared/$name.json"
    else
        say "cannot copy the profile to $shared/$name.json (is $shared mounted, writable, and in ReadWritePaths=?)"
        exit 4
    fi
fi

# 3. Object storage.
if [ -n "$upload" ]; then
    run timeout --signal=TERM --kill-after=10 "$upload_limit" \
        sh -c "$upload" hwadvisor-upload "$profile" "$name"
    up=$?
    if [ "$up" -ne 0 ]; then
        say "HWADVISOR_UPLOAD_COMMAND failed (exit $up)"
        exit "$up"
    fi
    say "uploaded by HWADVISOR_UPLOAD_COMMAND"
fi
exit 0
