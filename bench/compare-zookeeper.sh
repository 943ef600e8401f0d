#!/usr/bin/env bash
# Side by side, same machine, same run: a three-server ZooKeeper 3.8 ensemble (Debian's packages:
# apt-get install zookeeper) and a three-server corral cluster, both driven through their
# ZooKeeper protocol by node-zookeeper-client (bench --target zookeeper), one JSON line per
# system and workload. Data lives in a temp dir, removed at the end; everything on 127.0.0.1.
#
#   bash bench/compare-zookeeper.sh [bench flags...]     e.g. --workloads getData,setData --duration-s 5
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build --silent
ZK_JAR=/usr/share/java/zookeeper.jar
[ -f "$ZK_JAR" ] || { echo "ZooKeeper is not installed: apt-get install zookeeper zookeeper-bin" >&2; exit 1; }
WORK=$(mktemp -d /tmp/corral-compare-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Ports: ZooKeeper 23181-3 (quorum 23281-3, election 23381-3); corral gRPC 24181-3, ZooKeeper
# protocol 24281-3 (quorum and election at corral's usual offsets from 24181).
CP="$ZK_JAR:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"
for id in 1 2 3; do
  dir="$WORK/zk$id"; mkdir -p "$dir/data"; echo "$id" > "$dir/data/myid"
  {
    echo "tickTime=2000"; echo "initLimit=10"; echo "syncLimit=5"
    echo "dataDir=$dir/data"; echo "clientPort=$((23180 + id))"; echo "clientPortAddress=127.0.0.1"
    echo "admin.enableServer=false"; echo "4lw.commands.whitelist=*"
    for peer in 1 2 3; do echo "server.$peer=127.0.0.1:$((23280 + peer)):$((23380 + peer))"; done
  } > "$dir/zoo.cfg"
  printf 'log4j.rootLogger=WARN, F\nlog4j.appender.F=org.apache.log4j.FileAppender\nlog4j.appender.F.File=%s/zk.log\nlog4j.appender.F.layout=org.apache.log4j.PatternLayout\n' "$dir" > "$dir/log4j.properties"
  java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" > "$dir/out.log" 2>&1 &
  PIDS+=($!)
done
CORRAL_LOG_LEVEL=warn node dist/src/cli/main.js cluster --voters 3 --base-port 24181 --zk-base-port 24281 --data-dir "$WORK/corral" > "$WORK/corral.log" 2>&1 &
PIDS+=($!)

wait_serving() { # host:port → until srvr answers with a Mode line
  local port=${1##*:}
  for _ in $(seq 1 300); do
    if node -e 'const s=require("net").connect(+process.argv[1],"127.0.0.1",()=>s.write("srvr"));let t="";s.on("data",d=>t+=d);s.on("end",()=>process.exit(/Mode: (leader|follower)/.test(t)?0:1));s.on("error",()=>process.exit(1))' "$port"; then return 0; fi
    sleep 0.2
  done
  echo "$1 did not start serving" >&2; return 1
}
for port in 23181 23182 23183 24281 24282 24283; do wait_serving "127.0.0.1:$port"; done

ZK_HOSTS=127.0.0.1:23181,127.0.0.1:23182,127.0.0.1:23183
CORRAL_HOSTS=127.0.0.1:24281,127.0.0.1:24282,127.0.0.1:24283
echo "# ZooKeeper 3.8 ($ZK_HOSTS) then corral's ZooKeeper port ($CORRAL_HOSTS), each through node-zookeeper-client" >&2
for workload in $(node -e 'const i=process.argv.indexOf("--workloads");console.log((i>0?process.argv[i+1]:"create-sequential,setData,getData,mixed").split(",").join(" "))' -- "$@"); do
  rest=$(node -e 'const a=process.argv.slice(1);const i=a.indexOf("--workloads");if(i>=0)a.splice(i,2);console.log(a.join(" "))' -- "$@")
  # shellcheck disable=SC2086
  node dist/bench/run.js --target zookeeper --connect "$ZK_HOSTS" --workloads "$workload" $rest | sed 's/^{/{"system":"zookeeper-3.8",/'
  # shellcheck disable=SC2086
  node dist/bench/run.js --target zookeeper --connect "$CORRAL_HOSTS" --workloads "$workload" $rest | sed 's/^{/{"system":"corral",/'
done
