#!/bin/bash
# two_hosts.sh [--hide DIR] [--rate RATE] NP PROGRAM ARGS...: runs PROGRAM on NP ranks under mpirun
# across two "hosts" on this machine: two network namespaces joined by a veth pair, each
# with its own host name, so that Open MPI sees two nodes and connects them over TCP
# only (--mca btl tcp,self on that link). mpirun runs in host a; the ranks fill a's NP/2
# slots, then b's. --hide DIR: host b sees DIR empty (a tmpfs over it), as a host
# without the file system that a's files are on. --rate RATE: the link between the hosts
# carries at most RATE each way (tc's token bucket, e.g. 1gbit: a data center's slower
# links). Needs root (CAP_SYS_ADMIN); cleans up.
set -eu
hide=
rate=
if [ "$1" = --hide ]; then hide=$(realpath "$2"); shift 2; fi
if [ "$1" = --rate ]; then rate=$2; shift 2; fi
np=$1
shift
id=$$
a=shardc-$id-a b=shardc-$id-b
net=10.$((id % 200 + 20)).$((id / 200 % 250))
cleanup() { ip netns del "$a" 2> /dev/null || true; ip netns del "$b" 2> /dev/null || true; }
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip link add "sa$id" type veth peer name "sb$id"
ip link set "sa$id" netns "$a"
ip link set "sb$id" netns "$b"
ip -n "$a" addr add "$net.1/24" dev "sa$id"
ip -n "$b" addr add "$net.2/24" dev "sb$id"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
done
ip -n "$a" link set "sa$id" up
ip -n "$b" link set "sb$id" up
if [ -n "$rate" ]; then
  ip netns exec "$a" tc qdisc add dev "sa$id" root tbf rate "$rate" burst 256kb latency 50ms
  ip netns exec "$b" tc qdisc add dev "sb$id" root tbf rate "$rate" burst 256kb latency 50ms
fi

# The hosts share this machine's cores, which Open MPI does not know (each host's slots
# look like cores of its own): it bound each host's first rank to the same core (W4 on
# 2 ranks, one per host, ran at half speed), and ranks that wait without yielding kept
# the kernel from delivering the link's packets until the next scheduler tick (every
# collective took 8 to 24 ms, a 4 KiB all-reduce 8 ms instead of 0.05).
here=$(dirname "$(realpath "$0")")
hostfile=$(mktemp)
trap 'cleanup; rm -f "$hostfile"' EXIT
printf '%s slots=%d\n%s slots=%d\n' "$net.1" $((np / 2)) "$net.2" $((np - np / 2)) > "$hostfile"
export TWO_HOSTS="$net.1=$a $net.2=$b" TWO_HOSTS_HIDE="$hide"
ip netns exec "$a" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' host-a \
  mpirun --allow-run-as-root --hostfile "$hostfile" -np "$np" \
  --mca plm_rsh_agent "$here/netns_rsh.sh" \
  --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
  --mca mpi_yield_when_idle 1 --bind-to none \
  "$@"
