#!/usr/bin/env bash
# The cost of TLS, side by side in one run: two three-voter corral clusters on this machine, one
# in plain text and one with TLS on every port (`corral cluster --tls-*`: gRPC client ports with
# client certificates required, quorum and election links over mutual TLS), each workload driven
# through the SDK against one then the other. One JSON line per system and workload, tagged
# "system":"plain" or "system":"tls". Certificates are made with openssl in a temp dir, removed
# at the end with the clusters' data; everything on 127.0.0.1.
#
#   bash bench/compare-tls.sh [bench flags...]     e.g. --workloads getData,setData --duration-s 5
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build --silent
command -v openssl > /dev/null || { echo "openssl is needed to make the certificates" >&2; exit 1; }
WORK=$(mktemp -d /tmp/corral-compare-tls-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# A CA, and one certificate for 127.0.0.1 that every server uses as server and as client.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/ca.key" -out "$WORK/ca.pem" \
  -days 2 -subj "/CN=corral bench CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign > /dev/null 2>&1
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/server.key" -out "$WORK/server.csr" \
  -subj "/CN=corral bench" > /dev/null 2>&1
printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$WORK/server.ext"
openssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -set_serial 1 -days 2 \
  -extfile "$WORK/server.ext" -out "$WORK/server.pem" > /dev/null 2>&1
TLS_FLAGS=(--tls-ca-file "$WORK/ca.pem" --tls-cert-file "$WORK/server.pem" --tls-key-file "$WORK/server.key")

# Ports: plain 25181-3 (quorum 25888-, election 26888-, ZooKeeper 25281-); TLS 27181-3 (quorum
# 27888-, election 28888-, secure ZooKeeper 27281-).
CORRAL_LOG_LEVEL=warn node dist/src/cli/main.js cluster --voters 3 --base-port 25181 --data-dir "$WORK/plain" > "$WORK/plain.log" 2>&1 &
PIDS+=($!)
CORRAL_LOG_LEVEL=warn node dist/src/cli/main.js cluster --voters 3 --base-port 27181 --data-dir "$WORK/tls" "${TLS_FLAGS[@]}" > "$WORK/tls.log" 2>&1 &
PIDS+=($!)

wait_serving() { # host:port [tls flags...] → until the server accepts a session
  local address=$1; shift
  for _ in $(seq 1 300); do
    if node dist/src/cli/main.js health --connect "$address" --timeout-ms 2000 "$@" > /dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "$address did not start serving" >&2; return 1
}
for port in 25181 25182 25183; do wait_serving "127.0.0.1:$port"; done
for port in 27181 27182 27183; do wait_serving "127.0.0.1:$port" "${TLS_FLAGS[@]}"; done

PLAIN_HOSTS=127.0.0.1:25181,127.0.0.1:25182,127.0.0.1:25183
TLS_HOSTS=127.0.0.1:27181,127.0.0.1:27182,127.0.0.1:27183
echo "# plain-text cluster ($PLAIN_HOSTS) then TLS cluster ($TLS_HOSTS), each through the SDK" >&2
for workload in $(node -e 'const i=process.argv.indexOf("--workloads");console.log((i>0?process.argv[i+1]:"create-sequential,setData,getData,mixed").split(",").join(" "))' -- "$@"); do
  rest=$(node -e 'const a=process.argv.slice(1);const i=a.indexOf("--workloads");if(i>=0)a.splice(i,2);console.log(a.join(" "))' -- "$@")
  # shellcheck disable=SC2086
  node dist/bench/run.js --connect "$PLAIN_HOSTS" --workloads "$workload" $rest | sed 's/^{/{"system":"plain",/'
  # shellcheck disable=SC2086
  node dist/bench/run.js --connect "$TLS_HOSTS" --workloads "$workload" "${TLS_FLAGS[@]}" $rest | sed 's/^{/{"system":"tls",/'
done
