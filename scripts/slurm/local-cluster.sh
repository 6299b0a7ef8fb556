#!/usr/bin/env bash
# Throw-away Slurm cluster of N nodes on one machine (Debian 12 / slurm 22.05) for
# testing clmulti's batch scripts in CI or locally.
#
#   eval "$(scripts/slurm/local-cluster.sh start [--nodes N])"   # exports SLURM_CONF
#   scripts/slurm/local-cluster.sh status
#   scripts/slurm/local-cluster.sh kill-node NAME   # the node dies: every process in it, its network
#   scripts/slurm/local-cluster.sh logs             # the daemons' logs (tails)
#   scripts/slurm/local-cluster.sh stop
#   scripts/slurm/local-cluster.sh env              # prints the export line
#
# Each node (clm-node1 .. clm-nodeN, N >= 1, default 1) is one slurmd in its own
# namespaces: network (a named netns, clmulti-node<K>, joined by a veth pair to the
# bridge clmulti-br), UTS (its host name), PID (its slurmd, job steps and jobs die
# together when the node is killed) and mount (its own /proc); its spool, pid file and
# log are its own (%n in slurm.conf). One slurmctld and munged run outside, on the
# bridge's address; munge is shared (one key, one socket). The addresses are the
# bridge's and the nodes' on CLMULTI_SLURM_NET (a /24 of the benchmarking range
# 198.18.0.0/15 by default); start refuses when the machine already uses it. The file
# system is shared by all nodes, as a cluster's shared file system would be. The
# nodes split the machine's CPUs and memory between them.
#
# start is idempotent: it starts what is missing (a killed node comes back) and waits
# until every node is idle; a different node count or setting restarts the cluster.
# stop removes the namespaces, veths, bridge, daemons and state whatever state they
# are in (logs stay in $CLMULTI_SLURM_DIR/log until the next start).
#
# Everything except the Debian packages and the system munge daemon lives in
# $CLMULTI_SLURM_DIR (default /tmp/clmulti-slurm); /etc/slurm is not touched,
# so callers must export SLURM_CONF (start prints the line on stdout, all
# progress goes to stderr). One such cluster per machine (its names and ports are fixed):
# start refuses to start a second one, naming the first.
#
# Daemons are started directly (no systemd), run as root, and use no cgroup
# plugins, so this also works in containers that allow namespaces.
#
# Tunables: CLMULTI_SLURM_DIR, CLMULTI_SLURM_TIMEOUT (seconds to wait for the
# nodes to become idle, default 60), CLMULTI_SLURM_CTLD_PORT (6817),
# CLMULTI_SLURM_SLURMD_PORT (6818), CLMULTI_SLURM_CRED_EXPIRE (10 s; also the
# delay before a requeued job may start again), CLMULTI_SLURM_NET (198.18.24: the
# bridge is .1, node K is .(10+K)), CLMULTI_SLURM_NODE_TIMEOUT (10 s: how long a
# node may stay silent before Slurm marks it DOWN; 300 on a real cluster).
set -euo pipefail

DIR=${CLMULTI_SLURM_DIR:-/tmp/clmulti-slurm}
TIMEOUT=${CLMULTI_SLURM_TIMEOUT:-60}
CTLD_PORT=${CLMULTI_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${CLMULTI_SLURM_SLURMD_PORT:-6818}
CRED_EXPIRE=${CLMULTI_SLURM_CRED_EXPIRE:-10}
NET=${CLMULTI_SLURM_NET:-198.18.24}
NODE_TIMEOUT=${CLMULTI_SLURM_NODE_TIMEOUT:-10}
CONF=$DIR/etc/slurm.conf
export SLURM_CONF=$CONF
SELF=$(readlink -f "$0")
BRIDGE=clmulti-br
# Names this script creates, and the only ones stop removes.
NODE_PREFIX=clm-node
NETNS_PREFIX=clmulti-node
VETH_PREFIX=clmulti-n

log() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Only root can create namespaces and run slurmd/slurmctld as SlurmUser=root; re-exec once.
need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        exec sudo --preserve-env=CLMULTI_SLURM_DIR,CLMULTI_SLURM_TIMEOUT,CLMULTI_SLURM_CTLD_PORT,CLMULTI_SLURM_SLURMD_PORT,CLMULTI_SLURM_CRED_EXPIRE,CLMULTI_SLURM_NET,CLMULTI_SLURM_NODE_TIMEOUT "$0" "$@"
    fi
}

install_packages() {
    local missing=()
    command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
    command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
    command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
    command -v munged >/dev/null 2>&1 || missing+=(munge)
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v pgrep >/dev/null 2>&1 || missing+=(procps)
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

# Waits until a process is gone; true if it went within the seconds given.
wait_gone() {
    local pid=$1 seconds=$2 i
    for ((i = 0; i < seconds * 10; i++)); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.1
    done
    return 1
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

# The nodes of the configuration in use, one name a line.
conf_nodes() {
    [ -f "$CONF" ] || return 0
    sed -n "s/^NodeName=\(${NODE_PREFIX}[0-9]*\) .*/\1/p" "$CONF"
}

node_number() { echo "${1#"$NODE_PREFIX"}"; }
node_addr() { echo "$NET.$((10 + $(node_number "$1")))"; }
node_netns() { echo "$NETNS_PREFIX$(node_number "$1")"; }
node_veth() { echo "$VETH_PREFIX$(node_number "$1")"; }
node_pidfile() { echo "$DIR/run/$1.pid"; }

write_conf() {
    local nodes=$1 host cpus mem tmp k
    host=$(hostname -s)
    # The nodes share this machine: each gets its share of the CPUs and memory (at
    # least one CPU), never more than slurmd detects, so no node is drained for
    # "Low RealMemory" or a CPU mismatch.
    cpus=$(($(nproc) / nodes))
    ((cpus >= 1)) || cpus=1
    mem=$(($(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) * 9 / 10 / nodes))
    tmp=$(mktemp "$DIR/etc/slurm.conf.XXXXXX")
    cat >"$tmp" <<EOF
# Generated by clmulti scripts/slurm/local-cluster.sh; overwritten on start.
ClusterName=clmulti
# Literal addresses: host names need not resolve (containers, CI runners).
SlurmctldHost=$host($NET.1)
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
# %n: each node's own.
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/spool/%n/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroup plugins: containers usually cannot delegate cgroups, and with
# these two no cgroup.conf is read.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Every job's end (and requeue) with its nodes, for sacct --completion: accounting
# without slurmdbd and a database.
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MpiDefault=none
# Rlimits of the submitting shell may not be settable inside containers.
PropagateResourceLimits=NONE
ReturnToService=2
JobRequeue=1
# Per-CPU allocation, memory not consumable: several 1-CPU jobs share a
# node and a --mem request never makes a job wait.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Quick turnaround for tests.
SchedulerParameters=sched_interval=2
# A node silent this long is marked DOWN and its jobs requeued (tests kill one).
SlurmdTimeout=$NODE_TIMEOUT
InactiveLimit=0
KillWait=5
MinJobAge=300
EOF
    for ((k = 1; k <= nodes; k++)); do
        echo "NodeName=$NODE_PREFIX$k NodeAddr=$NET.$((10 + k)) CPUs=$cpus RealMemory=$mem State=UNKNOWN" >>"$tmp"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$tmp"
    if cmp -s "$tmp" "$CONF"; then
        rm -f "$tmp"
        return 1
    fi
    mv "$tmp" "$CONF"
    chmod 0644 "$CONF"
    return 0
}

# The bridge on the host side, with the controller's address.
start_bridge() {
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        # Addresses already in use on this machine are not ours to take.
        if [ -n "$(ip -o -4 addr show to "$NET.0/24")" ]; then
            die "$NET.0/24 is in use on this machine ($(ip -o -4 addr show to "$NET.0/24" | awk '{print $2, $4}' | tr '\n' ' ')); set CLMULTI_SLURM_NET to a free /24 prefix"
        fi
        ip link add "$BRIDGE" type bridge ||
            die "cannot create the bridge $BRIDGE (the kernel needs bridge support, a container CAP_NET_ADMIN)"
        ip addr add "$NET.1/24" dev "$BRIDGE"
    fi
    ip link set "$BRIDGE" up
}

# A node's network: its netns and a veth pair to the bridge (again after kill-node).
start_node_net() {
    local name=$1 ns veth
    ns=$(node_netns "$name")
    veth=$(node_veth "$name")
    [ -e "/run/netns/$ns" ] || ip netns add "$ns" ||
        die "cannot create the network namespace $ns (a container needs CAP_SYS_ADMIN)"
    if ! ip link show "$veth" >/dev/null 2>&1; then
        ip link add "$veth" type veth peer name eth0 netns "$ns" ||
            die "cannot create the veth pair $veth (the kernel needs veth support)"
        ip -n "$ns" addr add "$(node_addr "$name")/24" dev eth0
    fi
    ip link set "$veth" master "$BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
}

# The node's pid 1 (inside its namespaces): its host name, then slurmd in the
# foreground; this shell reaps the job steps slurmd leaves to it, and when slurmd
# ends the node ends, with every process in it.
cmd_node_init() {
    local name=$1
    hostname "$name"
    slurmd -D -N "$name" &
    wait "$!"
}

start_node() {
    local name=$1 ns pid
    ns=$(node_netns "$name")
    mkdir -p "$DIR/spool/$name"
    log "starting $name ($(node_addr "$name"))"
    # nsenter and unshare exec in place: the pid is unshare's, whose child is the
    # node's pid 1; --kill-child takes the node down if unshare dies. (Not `ip netns
    # exec`: it mounts a fresh /sys without /sys/fs/cgroup, which slurmd reads.)
    setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --pid --fork --mount-proc \
        --kill-child=SIGKILL -- "$SELF" node-init "$name" \
        </dev/null >>"$DIR/log/$name.console" 2>&1 &
    pid=$!
    echo "$pid" >"$(node_pidfile "$name")"
    # Until it is unshare (after two execs), the node would look dead.
    local i
    for ((i = 0; i < 50; i++)); do
        live_pid "$(node_pidfile "$name")" unshare >/dev/null && return 0
        [ -d "/proc/$pid" ] || break
        sleep 0.1
    done
    cat "$DIR/log/$name.console" >&2 || true
    die "$name did not start (nsenter/unshare: the kernel needs network, UTS, pid and mount namespaces; a container CAP_SYS_ADMIN)"
}

# Nodes die at once: SIGKILL to every process in them (slurmd, job steps, jobs; the
# pid namespace's init first, so none can outlive it), all nodes before waiting for
# any (a pid namespace takes a second or two to go); then their cables are pulled, so
# their addresses go silent as a dead host's do (start plugs them in again).
kill_nodes() {
    local name pid ns pids=()
    for name in "$@"; do
        if pid=$(live_pid "$(node_pidfile "$name")" unshare); then
            # shellcheck disable=SC2046
            kill -9 $(pgrep -P "$pid") "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
        rm -f "$(node_pidfile "$name")"
    done
    for pid in "${pids[@]}"; do
        wait_gone "$pid" 10 || die "unshare ($pid) of a node still there 10 s after SIGKILL"
    done
    for name in "$@"; do
        ip link set "$(node_veth "$name")" down 2>/dev/null || true
        # Whatever else runs in its network (a node started by an older run).
        ns=$(node_netns "$name")
        [ -e "/run/netns/$ns" ] || continue
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null || true
        done
    done
}

# Every node, the network and the namespaces this script creates, by their names.
remove_nodes() {
    local ns link pidfile names=()
    for pidfile in "$DIR"/run/"$NODE_PREFIX"*.pid; do
        [ -e "$pidfile" ] && names+=("$(basename "$pidfile" .pid)")
    done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NETNS_PREFIX}[0-9]+\$" || true); do
        [ -e "$DIR/run/$NODE_PREFIX${ns#"$NETNS_PREFIX"}.pid" ] || names+=("$NODE_PREFIX${ns#"$NETNS_PREFIX"}")
    done
    if ((${#names[@]})); then
        log "stopping ${names[*]}"
        kill_nodes "${names[@]}"
    fi
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NETNS_PREFIX}[0-9]+\$" || true); do
        ip netns del "$ns"
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^(${VETH_PREFIX}[0-9]+|$BRIDGE)\$" || true); do
        ip link del "$link" 2>/dev/null || true
    done
    rm -f "$DIR"/run/"$NODE_PREFIX"*.pid
}

descendants() {
    local child
    for child in $(pgrep -P "$1" || true); do
        echo "$child"
        descendants "$child"
    done
}

node_states() { sinfo -N -h -o '%N %T' 2>/dev/null | sort -u; }

cmd_logs() {
    local f
    for f in "$DIR/log/slurmctld.log" "$DIR"/log/slurmd-*.log "$DIR"/log/*.console; do
        [ -s "$f" ] || continue
        echo "---- tail $f"
        tail -n 40 "$f"
    done
}

stop_slurm() {
    local name pid
    remove_nodes
    # slurmd here is a one-node cluster of an older version of this script.
    for name in slurmd slurmctld; do
        pid=$(live_pid "$DIR/run/$name.pid" "$name") || continue
        log "stopping $name ($pid)"
        kill "$pid" 2>/dev/null || true
        wait_gone "$pid" 15 || kill -9 "$pid" 2>/dev/null || true
        rm -f "$DIR/run/$name.pid"
    done
    # Leftover step daemons of this cluster outside the nodes' namespaces (they
    # inherit our SLURM_CONF) and the job processes under them.
    for pid in $(pgrep -x slurmstepd || true); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
            log "killing leftover slurmstepd $pid and its job processes"
            kill -STOP "$pid" 2>/dev/null || true
            # shellcheck disable=SC2046
            kill -9 $(descendants "$pid") "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$DIR/state" "$DIR/spool"
}

# One cluster per machine (its ports, bridge and namespace names are fixed): a
# slurmctld of another configuration means another cluster runs here.
refuse_second_cluster() {
    local comm pid conf
    for comm in /proc/[0-9]*/comm; do
        [ "$(cat "$comm" 2>/dev/null)" = slurmctld ] || continue
        pid=${comm#/proc/}
        pid=${pid%/comm}
        conf=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_CONF=//p')
        [ "$conf" = "$CONF" ] && continue
        die "another cluster runs on this machine: slurmctld (pid $pid, SLURM_CONF=${conf:-unknown}) holds port $CTLD_PORT and the bridge $BRIDGE; use it, or stop it first (CLMULTI_SLURM_DIR=${conf%/etc/slurm.conf} $SELF stop)"
    done
}

cmd_start() {
    local nodes=1
    while (($#)); do
        case $1 in
            --nodes)
                nodes=${2:-}
                shift 2 || die "--nodes needs a number"
                ;;
            *) die "start: unknown argument $1 (start [--nodes N])" ;;
        esac
    done
    [[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes $nodes: expected a whole number >= 1"
    need_root start --nodes "$nodes"
    refuse_second_cluster
    local t0=$SECONDS name
    install_packages
    mkdir -p "$DIR/etc" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
    # Job output and the spool must be reachable by non-root job users too.
    chmod 0755 "$DIR" "$DIR/etc" "$DIR/spool"
    chmod 0700 "$DIR/state"
    start_munge
    if write_conf "$nodes"; then
        # A new config needs fresh daemons and nodes; restart whatever runs.
        stop_slurm
        mkdir -p "$DIR/state" "$DIR/spool"
        chmod 0700 "$DIR/state"
        rm -f "$DIR"/log/slurm*.log "$DIR"/log/*.console
    fi
    local t1=$SECONDS
    start_bridge
    if ! live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
        log "starting slurmctld ($NET.1:$CTLD_PORT)"
        # -c: start from an empty job/node state (test cluster); job ids start again,
        # so the completion log of the jobs before goes too.
        rm -f "$DIR/log/jobcomp.txt"
        slurmctld -c || {
            cmd_logs >&2
            die "slurmctld failed to start"
        }
    fi
    for name in $(conf_nodes); do
        live_pid "$(node_pidfile "$name")" unshare >/dev/null && continue
        kill_nodes "$name" # what a dead node left behind
        start_node_net "$name"
        start_node "$name"
    done
    local deadline=$((SECONDS + TIMEOUT)) states="" resumed="" waiting
    while :; do
        states=$(node_states || true)
        waiting=$(awk '$2 !~ /^(idle|mixed|allocated)$/' <<<"$states")
        [ -n "$states" ] && [ -z "$waiting" ] && break
        [ "$SECONDS" -lt "$deadline" ] || break
        for name in $(conf_nodes); do
            live_pid "$(node_pidfile "$name")" unshare >/dev/null && continue
            cmd_logs >&2
            die "$name ended while starting (its slurmd exited; logs above)"
        done
        # ReturnToService=2 normally brings a node back; a stale state may not.
        # shellcheck disable=SC2013 # node names are words
        for name in $(awk '$2 ~ /^(down|drain)/ {print $1}' <<<"$waiting"); do
            case " $resumed " in *" $name "*) continue ;; esac
            scontrol update NodeName="$name" State=RESUME 2>/dev/null || true
            resumed+=" $name"
        done
        sleep 0.5
    done
    if [ -z "$states" ] || [ -n "$waiting" ]; then
        cmd_logs >&2
        scontrol show node >&2 2>/dev/null || true
        die "nodes not idle after ${TIMEOUT} s: ${waiting:-no node answered}"
    fi
    log "cluster up: $(wc -l <<<"$states") node(s) $(awk '{print $1 "=" $2}' <<<"$states" | tr '\n' ' ')(total $((SECONDS - t0)) s, daemons $((SECONDS - t1)) s)"
    echo "export SLURM_CONF=$CONF"
}

cmd_kill_node() {
    local name=${1:-}
    [ -n "$name" ] || die "kill-node NAME (one of: $(conf_nodes | tr '\n' ' '))"
    conf_nodes | grep -qxF "$name" || die "$name is no node of this cluster (nodes: $(conf_nodes | tr '\n' ' '))"
    need_root kill-node "$name"
    kill_nodes "$name"
    log "$name killed (every process in it, then its network)"
}

cmd_stop() {
    [ -d "$DIR" ] || return 0
    need_root stop
    stop_slurm
    local pid
    if pid=$(live_pid "$DIR/run/munged.pid" munged); then
        log "stopping munged ($pid)"
        kill "$pid" 2>/dev/null || true
        wait_gone "$pid" 10 || true
    fi
    rm -f "$DIR/run/munged.pid"
    log "stopped"
}

cmd_status() {
    if ! command -v sinfo >/dev/null 2>&1 || [ ! -f "$CONF" ]; then
        echo "not installed/configured ($CONF missing)"
        return 0
    fi
    echo "export SLURM_CONF=$CONF"
    local name pid
    for name in munged slurmctld; do
        if pid=$(live_pid "$DIR/run/$name.pid" "$name"); then
            echo "$name: running ($pid)"
        elif [ "$name" = munged ] && munge_works; then
            echo "munged: running (not started by this script)"
        else
            echo "$name: not running"
        fi
    done
    for name in $(conf_nodes); do
        if pid=$(live_pid "$(node_pidfile "$name")" unshare); then
            echo "$name: running ($(node_addr "$name"), namespaces of pid $pid)"
        else
            echo "$name: not running"
        fi
    done
    live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null || return 0
    timeout 10 sinfo -N || true
    timeout 10 squeue || true
}

command=${1:-}
shift || true
case $command in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    kill-node) cmd_kill_node "$@" ;;
    logs) cmd_logs ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    node-init) cmd_node_init "$@" ;;
    *)
        echo "usage: $0 start [--nodes N]|stop|status|kill-node NAME|logs|env" >&2
        exit 2
        ;;
esac
