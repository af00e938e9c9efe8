#!/bin/bash
# Open MPI's launcher agent (plm_rsh_agent) for two_hosts.sh, in place of ssh:
# "netns_rsh.sh HOST COMMAND..." runs the command line in HOST's network namespace
# under the host's own name ($TWO_HOSTS: "IP=NAMESPACE ..."); host b sees
# $TWO_HOSTS_HIDE, if set, as an empty folder.
host=$1
shift
for pair in $TWO_HOSTS; do
  [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
[ -n "${ns:-}" ] || { echo "netns_rsh: no namespace for host $host" >&2; exit 1; }
name=host-${ns##*-}
hide=
[ "$name" = host-b ] && [ -n "$TWO_HOSTS_HIDE" ] && hide="mount -t tmpfs none '$TWO_HOSTS_HIDE';"
exec ip netns exec "$ns" unshare --uts --mount /bin/sh -c "hostname $name; $hide $*"
