#!/usr/bin/env bash
#SBATCH --job-name=hwadvisor-collect
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:30:00
#SBATCH --output=hwadvisor-collect-%j.out
#
# Collect hwadvisor profiles from the nodes of a Slurm cluster: one task per node runs
# `hwadvisor scan --json -` and its profile becomes OUT/<hostname>.json on shared storage,
# atomically (written to a temporary file in OUT, renamed once the scan has finished), so a
# reader of OUT never sees half a profile. `collect.sh --help` prints the usage below.
#
# As a batch job:           sbatch --nodes=16 collect.sh --out /shared/hwadvisor/profiles
# In an allocation:         salloc --nodes=16   then   bash collect.sh --out DIR
# From a login node:        bash collect.sh --nodes 16 --out DIR      (srun makes the allocation)
# Benchmarks, whole nodes:  sbatch --nodes=4 --exclusive --gres=gpu:8 collect.sh --bench --out DIR
#
# Things Slurm does to a scan (the profile records them honestly, so ask for what you want):
# - GPUs: where cgroups constrain devices, a step sees only the GPUs the job asked for. Ask for
#   all of a node's GPUs (--gres=gpu:N or --gpus-per-node=N), or the profile says "no GPU". A job
#   that gets its GPUs only implicitly through --exclusive does not pass them on to its steps.
# - CPUs: a task is confined to the CPUs it was given (one by default), which the profile shows
#   as usable_cpus and an affinity finding. Give --cpus-per-task with the CPUs of a node.
# - Benchmarks on nodes shared with other jobs measure what those jobs leave over: use
#   --exclusive (sbatch/salloc, or this script's --exclusive from a login node).

set -euo pipefail

usage() {
    cat <<'EOF'
Usage:
  sbatch [SBATCH OPTIONS] collect.sh --out DIR [OPTIONS] [-- SCAN ARGS...]
  bash collect.sh --out DIR [OPTIONS] [-- SCAN ARGS...]      (inside salloc/sbatch)
  bash collect.sh --nodes N --out DIR [OPTIONS] [-- SCAN ARGS...]   (from a login node)

Runs `hwadvisor scan --json -` once on every node (srun --ntasks-per-node=1) and writes
DIR/<hostname>.json atomically. Exit status 0 when every node wrote its profile (a scan that
exits 3, a degraded probe, counts: its profile is written), 1 when some did not, 2 on a
usage error.

Options:
  -o, --out DIR          folder for the profiles, on storage every node shares (required)
  -N, --nodes N          how many nodes (default: all of the job's; required outside a job)
      --bench            also run the microbenchmarks (default: detection only, --no-bench)
      --exclusive        whole nodes: srun --exclusive from a login node; inside a job, check
                         that the job has its nodes to itself (sbatch/salloc --exclusive)
      --cpus-per-task N  CPUs for each node's scan (srun --cpus-per-task; default: Slurm's)
      --timeout SECONDS  time limit of each node's scan (default: 900)
      --hwadvisor CMD    the hwadvisor command on the nodes (default: hwadvisor on PATH)
      --srun-arg ARG     one more srun argument, e.g. --srun-arg --partition=gpu (repeatable)
  -h, --help             this text
  --                     what follows goes to `hwadvisor scan` (e.g. -- --budget 10)
EOF
}

die() {
    echo "collect.sh: error: $*" >&2
    exit 2
}

need_value() {
    [ "$2" -ge 2 ] || die "$1 needs a value (see --help)"
}

OUT=""
NODES=""
BENCH=0
EXCLUSIVE=0
CPUS_PER_TASK=""
TIMEOUT=900
HWADVISOR=hwadvisor
SRUN_ARGS=()
SCAN_ARGS=()

while [ $# -gt 0 ]; do
    case "$1" in
        -o | --out) need_value "$1" $#; OUT=$2; shift 2 ;;
        -N | --nodes) need_value "$1" $#; NODES=$2; shift 2 ;;
        --bench) BENCH=1; shift ;;
        --exclusive) EXCLUSIVE=1; shift ;;
        --cpus-per-task) need_value "$1" $#; CPUS_PER_TASK=$2; shift 2 ;;
        --timeout) need_value "$1" $#; TIMEOUT=$2; shift 2 ;;
        --hwadvisor) need_value "$1" $#; HWADVISOR=$2; shift 2 ;;
        --srun-arg) need_value "$1" $#; SRUN_ARGS+=("$2"); shift 2 ;;
        -h | --help) usage; exit 0 ;;
        --) shift; SCAN_ARGS=("$@"); break ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done

is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

[ -n "$OUT" ] || die "--out DIR is required: the folder for the profiles, on shared storage"
is_count "$TIMEOUT" || die "--timeout must be a whole number of seconds, got '$TIMEOUT'"
[ -z "$CPUS_PER_TASK" ] || is_count "$CPUS_PER_TASK" ||
    die "--cpus-per-task must be a whole number, got '$CPUS_PER_TASK'"

SRUN=(srun --ntasks-per-node=1 --kill-on-bad-exit=0)
if [ -n "${SLURM_JOB_ID:-}" ]; then
    # Inside a job: its nodes, unless --nodes asks for fewer.
    NODES=${NODES:-${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-}}}
    is_count "$NODES" || die "cannot tell how many nodes job $SLURM_JOB_ID has: give --nodes N"
    if [ "$EXCLUSIVE" = 1 ]; then
        shared=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | grep -o 'OverSubscribe=[A-Z]*' || true)
        if [ "$shared" != "OverSubscribe=NO" ]; then
            echo "collect.sh: warning: job $SLURM_JOB_ID may share its nodes (${shared:-unknown});" \
                "submit it with sbatch --exclusive for benchmarks nothing else disturbs" >&2
        fi
    fi
else
    # From a login node: srun makes the allocation itself.
    is_count "${NODES:-}" || die "outside a Slurm job, --nodes N is required"
    SRUN+=(--job-name=hwadvisor-collect)
    [ "$EXCLUSIVE" = 1 ] && SRUN+=(--exclusive)
fi
SRUN+=(--nodes="$NODES" --ntasks="$NODES")
[ -n "$CPUS_PER_TASK" ] && SRUN+=(--cpus-per-task="$CPUS_PER_TASK")
if [ "$BENCH" = 1 ] && [ "$EXCLUSIVE" = 0 ]; then
    echo "collect.sh: note: benchmarks on nodes other jobs may share; --exclusive keeps them alone" >&2
fi

mkdir -p -- "$OUT"
[ -w "$OUT" ] || die "$OUT is not writable"

# What each node runs (bash -c, so that no copy of this script is needed on the nodes: sbatch
# runs a private copy of it on the first node only). Arguments: OUT TIMEOUT HWADVISOR BENCH
# [SCAN ARGS...]. It prints one status line and exits 0 when the profile was written.
read -r -d '' NODE_TASK <<'EOF' || true
out=$1 limit=$2 hwadvisor=$3 bench=$4
shift 4
[ "$bench" = 1 ] || set -- --no-bench "$@"
host=$(hostname)
tmp="$out/.$host.json.${SLURM_JOB_ID:-0}.$$"
trap 'rm -f -- "$tmp"' EXIT
timeout --signal=TERM --kill-after=30 "$limit" "$hwadvisor" scan --json - "$@" >"$tmp"
rc=$?
if { [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; } && [ -s "$tmp" ]; then
    mv -f -- "$tmp" "$out/$host.json"
    note=""
    [ "$rc" -eq 3 ] && note=" (exit 3: a probe was degraded, see diagnostics.probes)"
    echo "hwadvisor-collect: ok $host $out/$host.json$note"
    exit 0
fi
case $rc in
    0 | 3) why="exit $rc but no profile on standard output" ;;
    124) why="did not finish within $limit s" ;;
    126 | 127) why="cannot run $hwadvisor (exit $rc)" ;;
    *) why="exit $rc" ;;
esac
echo "hwadvisor-collect: failed $host: $why"
exit 1
EOF

STATUS=$(mktemp "${TMPDIR:-/tmp}/hwadvisor-collect.XXXXXX")
trap 'rm -f -- "$STATUS"' EXIT

echo "collect.sh: ${SRUN[*]} ${SRUN_ARGS[*]:-} (hwadvisor scan on $NODES node(s) into $OUT)" >&2
set +e
"${SRUN[@]}" ${SRUN_ARGS[@]+"${SRUN_ARGS[@]}"} bash -c "$NODE_TASK" hwadvisor-collect-node \
    "$OUT" "$TIMEOUT" "$HWADVISOR" "$BENCH" ${SCAN_ARGS[@]+"${SCAN_ARGS[@]}"} | tee "$STATUS"
srun_rc=${PIPESTATUS[0]}
set -e

written=$(grep -c '^hwadvisor-collect: ok ' "$STATUS" || true)
failed=$(grep -c '^hwadvisor-collect: failed ' "$STATUS" || true)
echo "collect.sh: $written profile(s) written to $OUT, $failed node(s) failed (srun exit $srun_rc)" >&2
if [ "$srun_rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$written" -lt "$NODES" ]; then
    exit 1
fi
exit 0
