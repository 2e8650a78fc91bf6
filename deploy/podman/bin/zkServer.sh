#!/bin/bash
# The two uses of the zookeeper image's zkServer.sh here: `start-foreground`, a standalone
# server on 2181 configured from the ZOO_... variables that image reads, and `status`, which
# succeeds once the server answers `srvr` with its mode (the compose file's health check).
set -euo pipefail
case "${1:-}" in
  start-foreground)
    mkdir -p /data /datalog /conf
    cat >/conf/zoo.cfg <<CFG
dataDir=/data
dataLogDir=/datalog
tickTime=${ZOO_TICK_TIME:-2000}
initLimit=${ZOO_INIT_LIMIT:-5}
syncLimit=${ZOO_SYNC_LIMIT:-2}
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
clientPort=2181
admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
CFG
    exec java -Xmx256m -Dzookeeper.jmx.log4j.disable=true -cp '/opt/zookeeper/lib/*' \
      org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
    ;;
  status)
    exec 3<>/dev/tcp/127.0.0.1/2181
    printf srvr >&3
    timeout 5 cat <&3 | grep -q '^Mode: '
    ;;
  *)
    echo "usage: zkServer.sh start-foreground|status" >&2
    exit 2
    ;;
esac
