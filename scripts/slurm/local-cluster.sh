#!/usr/bin/env bash
# Throw-away one-node Slurm cluster (Debian 12 / slurm 22.05) for testing
# clmulti's batch scripts in CI or locally.
#
#   eval "$(scripts/slurm/local-cluster.sh start)"   # exports SLURM_CONF
#   scripts/slurm/local-cluster.sh status
#   scripts/slurm/local-cluster.sh stop
#   scripts/slurm/local-cluster.sh env               # prints the export line
#
# Everything except the Debian packages and the system munge daemon lives in
# $CLMULTI_SLURM_DIR (default /tmp/clmulti-slurm); /etc/slurm is not touched,
# so callers must export SLURM_CONF (start prints the line on stdout, all
# progress goes to stderr).
#
# Daemons are started directly (no systemd), run as root, and use no cgroup
# plugins, so this also works in containers (docker, gVisor).
#
# Tunables: CLMULTI_SLURM_DIR, CLMULTI_SLURM_TIMEOUT (seconds to wait for the
# node to become idle, default 60), CLMULTI_SLURM_CTLD_PORT (6817),
# CLMULTI_SLURM_SLURMD_PORT (6818), CLMULTI_SLURM_CRED_EXPIRE (10 s; also the
# delay before a requeued job may start again).
set -euo pipefail

DIR=${CLMULTI_SLURM_DIR:-/tmp/clmulti-slurm}
TIMEOUT=${CLMULTI_SLURM_TIMEOUT:-60}
CTLD_PORT=${CLMULTI_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${CLMULTI_SLURM_SLURMD_PORT:-6818}
CRED_EXPIRE=${CLMULTI_SLURM_CRED_EXPIRE:-10}
CONF=$DIR/etc/slurm.conf
export SLURM_CONF=$CONF

log() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Only root can run slurmd/slurmctld as SlurmUser=root; re-exec once.
need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        exec sudo --preserve-env=CLMULTI_SLURM_DIR,CLMULTI_SLURM_TIMEOUT,CLMULTI_SLURM_CTLD_PORT,CLMULTI_SLURM_SLURMD_PORT,CLMULTI_SLURM_CRED_EXPIRE "$0" "$@"
    fi
}

install_packages() {
    local missing=()
    command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
    command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
    command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
    command -v munged >/dev/null 2>&1 || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]} (apt-get, log in $DIR/log/apt.log)"
    local t0=$SECONDS
    mkdir -p "$DIR/log"
    # Always update: fresh CI images often have empty/stale package lists.
    if ! {
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                --no-install-recommends "${missing[@]}"
    } >"$DIR/log/apt.log" 2>&1; then
        tail -n 30 "$DIR/log/apt.log" >&2
        die "apt-get failed"
    fi
    log "apt-get took $((SECONDS - t0)) s"
}

# pid from a pidfile, only if that process is alive and has the expected name
# (pidfiles outlive containers, pids get reused).
live_pid() {
    local file=$1 name=$2 pid
    [ -s "$file" ] || return 1
    pid=$(tr -dc '0-9' <"$file")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm")" = "$name" ] || return 1
    echo "$pid"
}

munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    # Debian's postinst normally creates the key; containers built with
    # policy-rc.d or stripped images may lack it.
    if [ ! -s /etc/munge/munge.key ]; then
        log "creating /etc/munge/munge.key"
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
    fi
    # munged refuses keys/dirs not owned by its user or readable by others.
    chown munge:munge /etc/munge /etc/munge/munge.key
    chmod 0700 /etc/munge
    chmod 0400 /etc/munge/munge.key
    if munge_works; then
        return 0 # system munged (systemd or earlier run) is fine; not ours.
    fi
    # No tmpfiles.d without systemd.
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    # munged writes /run/munge/munged.pid; remember that we own it.
    cp /run/munge/munged.pid "$DIR/run/munged.pid" 2>/dev/null || true
    for _ in $(seq 1 20); do
        munge_works && return 0
        sleep 0.5
    done
    tail -n 20 /var/log/munge/munged.log >&2 || true
    die "munged did not come up"
}

write_conf() {
    local host hw tmp
    host=$(hostname -s)
    # slurmd -C reports what slurmd itself will detect; using exactly that
    # avoids the node being drained for "Low RealMemory"/CPU mismatch.
    # The first line is "NodeName=... CPUs=... RealMemory=..."; drop NodeName.
    hw=$(slurmd -C 2>/dev/null | head -n 1 | sed -e 's/^NodeName=[^ ]* *//')
    if ! grep -q 'CPUs=' <<<"$hw"; then
        hw="CPUs=$(nproc) RealMemory=$(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo)"
    fi
    tmp=$(mktemp "$DIR/etc/slurm.conf.XXXXXX")
    cat >"$tmp" <<EOF
# Generated by clmulti scripts/slurm/local-cluster.sh; overwritten on start.
ClusterName=clmulti
# Literal address: the host name need not resolve (containers, CI runners).
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# The credential lifetime is also how long a requeued job stays pending
# (Reason=BeginTime): default 120 s, too slow for tests.
AuthInfo=cred_expire=$CRED_EXPIRE
# Default /bin/mail is not installed; avoids an error in the log.
MailProg=/bin/true
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroup plugins: containers usually cannot delegate cgroups, and with
# these two no cgroup.conf is read.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
# Rlimits of the submitting shell may not be settable inside containers.
PropagateResourceLimits=NONE
ReturnToService=2
JobRequeue=1
# Per-CPU allocation, memory not consumable: several 1-CPU jobs share the
# node and a --mem request never makes a job wait.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Quick turnaround for tests.
SchedulerParameters=sched_interval=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    if cmp -s "$tmp" "$CONF"; then
        rm -f "$tmp"
        return 1
    fi
    mv "$tmp" "$CONF"
    chmod 0644 "$CONF"
    return 0
}

descendants() {
    local child
    for child in $(pgrep -P "$1" || true); do
        echo "$child"
        descendants "$child"
    done
}

node_state() { sinfo -h -o %T 2>/dev/null | head -n 1; }

dump_logs() {
    local f
    for f in "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log"; do
        [ -f "$f" ] || continue
        log "---- tail $f"
        tail -n 30 "$f" >&2
    done
}

stop_daemons() {
    local name pid
    # Running jobs' slurmstepd processes outlive slurmd; cancel them first.
    if live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
        local ids
        ids=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
        if [ -n "$ids" ]; then
            # shellcheck disable=SC2086
            timeout 10 scancel --quiet $ids 2>/dev/null || true
        fi
        for _ in $(seq 1 20); do
            [ -z "$(timeout 5 squeue -h -t running,completing -o %A 2>/dev/null || true)" ] && break
            sleep 0.5
        done
    fi
    for name in slurmd slurmctld; do
        pid=$(live_pid "$DIR/run/$name.pid" "$name") || continue
        log "stopping $name ($pid)"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 30); do
            [ -d "/proc/$pid" ] || break
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$DIR/run/$name.pid"
    done
    # Leftover step daemons of this cluster (they inherit our SLURM_CONF)
    # and the job processes under them.
    for pid in $(pgrep -x slurmstepd || true); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
            log "killing leftover slurmstepd $pid and its job processes"
            kill -STOP "$pid" 2>/dev/null || true
            # shellcheck disable=SC2046
            kill -9 $(descendants "$pid") "$pid" 2>/dev/null || true
        fi
    done
    if pid=$(live_pid "$DIR/run/munged.pid" munged); then
        log "stopping munged ($pid)"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do
            [ -d "/proc/$pid" ] || break
            sleep 0.5
        done
    fi
    rm -f "$DIR/run/munged.pid"
}

cmd_start() {
    need_root start
    local t0=$SECONDS changed=0
    install_packages
    mkdir -p "$DIR/etc" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
    # Job output and the spool must be reachable by non-root job users too.
    chmod 0755 "$DIR" "$DIR/etc" "$DIR/spool"
    chmod 0700 "$DIR/state"
    start_munge
    write_conf && changed=1
    if [ "$changed" -eq 1 ]; then
        # A new config needs fresh daemons; restart whatever runs.
        stop_daemons_keep_munge
    fi
    local t1=$SECONDS
    if ! live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
        log "starting slurmctld"
        # -c: start from an empty job/node state (test cluster).
        slurmctld -c || { dump_logs; die "slurmctld failed to start"; }
    fi
    if ! live_pid "$DIR/run/slurmd.pid" slurmd >/dev/null; then
        log "starting slurmd"
        slurmd -N "$(hostname -s)" || { dump_logs; die "slurmd failed to start"; }
    fi
    local deadline=$((SECONDS + TIMEOUT)) state="" resumed=0
    while [ "$SECONDS" -lt "$deadline" ]; do
        state=$(node_state || true)
        case $state in
            idle | mixed | allocated) break ;;
            down* | drain*)
                # ReturnToService=2 normally does this; a stale state may not.
                if [ "$resumed" -eq 0 ]; then
                    scontrol update NodeName="$(hostname -s)" State=RESUME 2>/dev/null || true
                    resumed=1
                fi
                ;;
        esac
        sleep 1
    done
    case $state in
        idle | mixed | allocated) ;;
        *)
            dump_logs
            scontrol show node >&2 2>/dev/null || true
            die "node not idle after ${TIMEOUT} s (state: '${state:-none}')"
            ;;
    esac
    log "cluster up: node $state (total $((SECONDS - t0)) s, daemons $((SECONDS - t1)) s)"
    echo "export SLURM_CONF=$CONF"
}

# Config change while running: restart slurm daemons, keep munge.
stop_daemons_keep_munge() {
    local keep=""
    [ -f "$DIR/run/munged.pid" ] && keep=$(cat "$DIR/run/munged.pid")
    rm -f "$DIR/run/munged.pid"
    stop_daemons
    [ -n "$keep" ] && echo "$keep" >"$DIR/run/munged.pid"
    return 0
}

cmd_stop() {
    [ -d "$DIR" ] || return 0
    need_root stop
    stop_daemons
    log "stopped"
}

cmd_status() {
    if ! command -v sinfo >/dev/null 2>&1 || [ ! -f "$CONF" ]; then
        echo "not installed/configured ($CONF missing)"
        return 0
    fi
    echo "export SLURM_CONF=$CONF"
    local name pid
    for name in munged slurmctld slurmd; do
        if pid=$(live_pid "$DIR/run/$name.pid" "$name"); then
            echo "$name: running ($pid)"
        elif [ "$name" = munged ] && munge_works; then
            echo "munged: running (not started by this script)"
        else
            echo "$name: not running"
        fi
    done
    live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null || return 0
    timeout 10 sinfo || true
    timeout 10 squeue || true
}

case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *)
        echo "usage: $0 start|stop|status|env" >&2
        exit 2
        ;;
esac
