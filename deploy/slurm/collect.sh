#!/usr/bin/env bash
#SBATCH --job-name=hwadvisor-collect
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:30:00
#SBATCH --output=hwadvisor-collect-%j.out
#
# Collect hwadvisor profiles from the nodes of a Slurm cluster: one task per node runs
# `hwadvisor scan --json -` and its profile becomes OUT/<node>.json on shared storage, named
# after the node as Slurm knows it (SLURMD_NODENAME; `hostname -s` outside Slurm), mode 0600,
# atomically (written to a temporary file in OUT, renamed once the scan has finished), so a
# reader of OUT never sees half a profile. The job's partition is recorded as the label
# partition=... `collect.sh --help` prints the usage below.
#
# Whole nodes, so that each profile has all of the node's CPUs and GPUs (8 GPUs a node here):
#   sbatch --nodes=16 --exclusive --gres=gpu:8 collect.sh --out /shared/hwadvisor/profiles
# Busy nodes, each scanned when it is free (one small whole-node job per node, from a login node):
#   bash collect.sh --per-node --partition gpu --out /shared/hwadvisor/profiles
# In an allocation:         salloc --nodes=16 --exclusive --gres=gpu:8   then   bash collect.sh --out DIR
# From a login node:        bash collect.sh --nodes 16 --exclusive --srun-arg --gres=gpu:8 --out DIR
# Benchmarks, whole nodes:  sbatch --nodes=4 --exclusive --gres=gpu:8 collect.sh --bench --out DIR
# A cluster that is never idle is better served by the systemd timer (deploy/systemd): it scans
# each node in place, whatever runs there.
#
# Things Slurm does to a scan (the profile records them honestly, so ask for what you want):
# - GPUs: where cgroups constrain devices, a step sees only the GPUs the job asked for. Ask for
#   all of a node's GPUs (--gres=gpu:N or --gpus-per-node=N), or the profile says "no GPU". A job
#   that gets its GPUs only implicitly through --exclusive does not pass them on to its steps.
# - CPUs: a task is confined to the CPUs it was given (one by default), which the profile shows
#   as usable_cpus and an affinity finding. Inside a job this script gives each node's scan all
#   the CPUs the job has there (--cpus-per-task from SLURM_JOB_CPUS_PER_NODE): with --exclusive,
#   the whole node. --cpus-per-task N sets it by hand.
# - Benchmarks on nodes shared with other jobs measure what those jobs leave over: use
#   --exclusive (sbatch/salloc, or this script's --exclusive from a login node).
# - hwadvisor on a network filesystem (NFS, Lustre, GPFS, BeeGFS, ...): every node starts Python
#   and imports hwadvisor (and PyTorch) from it at once, which can take minutes on 1,000 nodes.
#   The script warns; install hwadvisor on each node's local disk (the Ansible role does) and give
#   --hwadvisor /opt/hwadvisor/venv/bin/hwadvisor.

set -euo pipefail

usage() {
    cat <<'EOF'
Usage:
  sbatch --nodes=N --exclusive --gres=gpu:G collect.sh --out DIR [OPTIONS] [-- SCAN ARGS...]
  bash collect.sh --out DIR [OPTIONS] [-- SCAN ARGS...]      (inside salloc/sbatch)
  bash collect.sh --nodes N --out DIR [OPTIONS] [-- SCAN ARGS...]   (from a login node)
  bash collect.sh --per-node [--partition P | --nodelist LIST] --out DIR [OPTIONS]

Runs `hwadvisor scan --json -` once on every node (srun --ntasks-per-node=1) and writes
DIR/<node>.json (mode 0600) atomically, <node> being SLURMD_NODENAME. Exit status 0 when every
node wrote its profile (a scan that exits 3, a degraded probe, counts: its profile is written),
1 when some did not, 2 on a usage error.

--per-node submits one small job per node instead (sbatch --nodelist=NODE --exclusive
--gres=gpu:<its GPUs>), each running this script on its node when that node is free; it exits
0 when every job was submitted. Watch them with `squeue -n hwadvisor-scan`.

Options:
  -o, --out DIR          folder for the profiles, on storage every node shares (required)
  -N, --nodes N          how many nodes (default: all of the job's; required outside a job)
      --bench            also run the microbenchmarks (default: detection only, --no-bench)
      --exclusive        whole nodes: srun --exclusive from a login node; inside a job, check
                         that the job has its nodes to itself (sbatch/salloc --exclusive)
      --cpus-per-task N  CPUs for each node's scan (default inside a job: all the job has on
                         each node; from a login node: Slurm's)
      --timeout SECONDS  time limit of each node's scan (default: 900)
      --hwadvisor CMD    the hwadvisor command on the nodes (default: hwadvisor on PATH)
      --srun-arg ARG     one more srun argument, e.g. --srun-arg --partition=gpu (repeatable)
      --per-node         one whole-node job per node, each when its node is free (login node)
      --partition P      with --per-node: the nodes of partition P, and the jobs' partition
      --nodelist LIST    with --per-node: these nodes (a Slurm host list, e.g. gpu[01-16])
      --sbatch-arg ARG   with --per-node: one more sbatch argument, e.g. --account=ops
  -h, --help             this text
  --                     what follows goes to `hwadvisor scan` (e.g. -- --budget 10)
EOF
}

die() {
    echo "collect.sh: error: $*" >&2
    exit 2
}

warn() {
    echo "collect.sh: warning: $*" >&2
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
PER_NODE=0
PARTITION=""
NODELIST=""
SRUN_ARGS=()
SBATCH_ARGS=()
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
        --per-node) PER_NODE=1; shift ;;
        --partition) need_value "$1" $#; PARTITION=$2; shift 2 ;;
        --nodelist) need_value "$1" $#; NODELIST=$2; shift 2 ;;
        --sbatch-arg) need_value "$1" $#; SBATCH_ARGS+=("$2"); shift 2 ;;
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
if [ "$PER_NODE" = 0 ] && { [ -n "$PARTITION" ] || [ -n "$NODELIST" ] || [ ${#SBATCH_ARGS[@]} -gt 0 ]; }; then
    die "--partition, --nodelist and --sbatch-arg go with --per-node (else: --srun-arg --partition=P)"
fi
[ -z "$PARTITION" ] || [ -z "$NODELIST" ] || die "give --partition or --nodelist, not both"

# The fewest CPUs the job has on any of its nodes, from SLURM_JOB_CPUS_PER_NODE ("96(x2),64"),
# else SLURM_CPUS_ON_NODE (this node's); nothing when neither is known.
job_cpus_per_node() {
    local spec=${SLURM_JOB_CPUS_PER_NODE:-} fewest="" part count
    local -a parts=()
    IFS=, read -r -a parts <<<"$spec"
    for part in ${parts[@]+"${parts[@]}"}; do
        count=${part%%(*}
        is_count "$count" || { fewest=""; break; }
        if [ -z "$fewest" ] || [ "$count" -lt "$fewest" ]; then fewest=$count; fi
    done
    if [ -z "$fewest" ] && is_count "${SLURM_CPUS_ON_NODE:-}"; then fewest=$SLURM_CPUS_ON_NODE; fi
    echo "$fewest"
}

# Warn when the hwadvisor command lives on a network filesystem (seen from this node).
check_local_install() {
    local path kind
    path=$(command -v -- "$HWADVISOR" 2>/dev/null) || return 0 # not here: maybe on the nodes
    path=$(readlink -f -- "$path" 2>/dev/null || echo "$path")
    kind=$(stat -f -c %T -- "$path" 2>/dev/null) || return 0
    case "$kind" in
        nfs* | lustre | gpfs | beegfs | ceph | cifs | smb* | fuse* | panfs | wekafs | afs | 9p | glusterfs | orangefs)
            warn "$path is on a network filesystem ($kind): every node starts Python and" \
                "imports hwadvisor (and PyTorch) from it at once. Install hwadvisor on each" \
                "node's local disk and give --hwadvisor PATH (docs/fleet.md, Slurm)"
            ;;
    esac
}

# --------------------------------------------------------------------------------------------
# --per-node: one whole-node job per node, submitted from a login node.

# The GPUs of a node, from the Gres= of `scontrol show node` ("gpu:h100:8(S:0-1),gpu:2"): 10.
node_gpus() {
    local line gres item count total=0
    line=$(scontrol show node -o "$1" 2>/dev/null) || { echo 0; return; }
    gres=$(grep -o 'Gres=[^ ]*' <<<"$line" | head -n 1 || true)
    gres=${gres#Gres=}
    while [[ $gres =~ \([^\)]*\) ]]; do # "(S:0-1)", "(IDX:0,2)": not counts
        gres=${gres/"${BASH_REMATCH[0]}"/}
    done
    local -a items=()
    IFS=, read -r -a items <<<"$gres"
    for item in ${items[@]+"${items[@]}"}; do
        case "$item" in
            gpu:*)
                count=${item##*:}
                is_count "$count" && total=$((total + count))
                ;;
        esac
    done
    echo "$total"
}

submit_per_node() {
    [ -z "${SLURM_JOB_ID:-}" ] || die "--per-node submits jobs: run it from a login node, not in job $SLURM_JOB_ID"
    [ -z "$NODES" ] || die "--per-node scans every node it lists: use --partition or --nodelist, not --nodes"
    local -a nodes=()
    if [ -n "$NODELIST" ]; then
        mapfile -t nodes < <(scontrol show hostnames "$NODELIST")
    elif [ -n "$PARTITION" ]; then
        mapfile -t nodes < <(sinfo -h -N -p "$PARTITION" -o %N | sort -u)
    else
        mapfile -t nodes < <(sinfo -h -N -o %N | sort -u)
    fi
    [ ${#nodes[@]} -gt 0 ] || die "no nodes found (--partition '$PARTITION' --nodelist '$NODELIST')"

    # What each job runs: this script on its node, inside the job (it then scans with all the
    # node's CPUs and the GPUs the job asked for).
    local self
    self=$(readlink -f -- "${BASH_SOURCE[0]}")
    local -a inner=(--out "$OUT" --timeout "$TIMEOUT" --hwadvisor "$HWADVISOR")
    [ "$BENCH" = 1 ] && inner+=(--bench)
    [ -z "$CPUS_PER_TASK" ] || inner+=(--cpus-per-task "$CPUS_PER_TASK")
    local arg
    for arg in ${SRUN_ARGS[@]+"${SRUN_ARGS[@]}"}; do inner+=(--srun-arg "$arg"); done
    [ ${#SCAN_ARGS[@]} -eq 0 ] || inner+=(-- "${SCAN_ARGS[@]}")
    # The scan's limit, the kill after it, and a margin, in minutes: a short job fits the gaps the
    # backfill scheduler finds.
    local minutes=$(((TIMEOUT + 30 + 120 + 59) / 60))

    local node gpus job submitted=0 failed=0
    local -a sbatch
    for node in "${nodes[@]}"; do
        gpus=$(node_gpus "$node")
        sbatch=(sbatch --parsable --job-name=hwadvisor-scan --nodelist="$node" --nodes=1
            --ntasks-per-node=1 --exclusive --time="$minutes"
            --output="hwadvisor-scan-%N-%j.out")
        [ "$gpus" -gt 0 ] && sbatch+=(--gres="gpu:$gpus")
        [ -z "$PARTITION" ] || sbatch+=(--partition="$PARTITION")
        if job=$("${sbatch[@]}" ${SBATCH_ARGS[@]+"${SBATCH_ARGS[@]}"} "$self" "${inner[@]}"); then
            echo "hwadvisor-collect: submitted $node job ${job%%;*} (${gpus} GPU(s), whole node)"
            submitted=$((submitted + 1))
        else
            echo "hwadvisor-collect: failed $node: sbatch refused the job"
            failed=$((failed + 1))
        fi
    done
    echo "collect.sh: $submitted job(s) submitted, $failed refused; each writes $OUT/<node>.json" \
        "when its node is free (squeue -n hwadvisor-scan)" >&2
    [ "$failed" -eq 0 ]
}

mkdir -p -- "$OUT"
[ -w "$OUT" ] || die "$OUT is not writable"
check_local_install

if [ "$PER_NODE" = 1 ]; then
    if submit_per_node; then exit 0; else exit 1; fi
fi

SRUN=(srun --ntasks-per-node=1 --kill-on-bad-exit=0)
if [ -n "${SLURM_JOB_ID:-}" ]; then
    # Inside a job: its nodes, unless --nodes asks for fewer, and all the CPUs it has on them.
    NODES=${NODES:-${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-}}}
    is_count "$NODES" || die "cannot tell how many nodes job $SLURM_JOB_ID has: give --nodes N"
    [ -n "$CPUS_PER_TASK" ] || CPUS_PER_TASK=$(job_cpus_per_node)
    if [ "$EXCLUSIVE" = 1 ]; then
        shared=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | grep -o 'OverSubscribe=[A-Z]*' || true)
        if [ "$shared" != "OverSubscribe=NO" ]; then
            warn "job $SLURM_JOB_ID may share its nodes (${shared:-unknown});" \
                "submit it with sbatch --exclusive for benchmarks nothing else disturbs"
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

# What each node runs (bash -c, so that no copy of this script is needed on the nodes: sbatch
# runs a private copy of it on the first node only). Arguments: OUT TIMEOUT HWADVISOR BENCH
# [SCAN ARGS...]. It prints one status line and exits 0 when the profile was written.
read -r -d '' NODE_TASK <<'EOF' || true
out=$1 limit=$2 hwadvisor=$3 bench=$4
shift 4
umask 077
[ "$bench" = 1 ] || set -- --no-bench "$@"
[ -z "${SLURM_JOB_PARTITION:-}" ] || set -- --label "partition=$SLURM_JOB_PARTITION" "$@"
host=${SLURMD_NODENAME:-$(hostname -s)}
case $host in
    "" | .* | */*)
        echo "hwadvisor-collect: failed ${SLURM_PROCID:-?}: no usable node name '$host'"
        exit 1 ;;
esac
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
