#!/usr/bin/env bash
# This checkout against an earlier commit, side by side in one run: a three-voter cluster of each
# (the earlier one built in a temporary git worktree), every workload driven through each build's
# own SDK against one then the other, rep after rep, and a table of medians and ratios (this / earlier).
# One JSON line per build, workload and rep on stdout, tagged "build":"base" or "build":"this";
# the table on stderr. Everything on 127.0.0.1; the clusters' data and the worktree are removed.
#
#   bash bench/compare-builds.sh REV [--reps 3] [bench flags...]   e.g. main~5 --duration-s 5
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_REV=${1:?usage: bench/compare-builds.sh REV [--reps N] [bench flags...]}
shift
REPS=3
if [ "${1:-}" = "--reps" ]; then REPS=$2; shift 2; fi
npm run build --silent
WORK=$(mktemp -d /tmp/corral-compare-builds-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git worktree remove --force "$WORK/base" > /dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

git worktree add --detach "$WORK/base" "$BASE_REV" > /dev/null
ln -s "$PWD/node_modules" "$WORK/base/node_modules"
(cd "$WORK/base" && npm run build --silent)

# Ports: base 29181-3 (quorum, election and admin ports follow `corral cluster`'s layout), this 31181-3.
CORRAL_LOG_LEVEL=warn node "$WORK/base/dist/src/cli/main.js" cluster --voters 3 --base-port 29181 --data-dir "$WORK/base-data" > "$WORK/base.log" 2>&1 &
PIDS+=($!)
CORRAL_LOG_LEVEL=warn node dist/src/cli/main.js cluster --voters 3 --base-port 31181 --data-dir "$WORK/this-data" > "$WORK/this.log" 2>&1 &
PIDS+=($!)

wait_serving() {
  for _ in $(seq 1 300); do
    if node dist/src/cli/main.js health --connect "$1" --timeout-ms 2000 > /dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "$1 did not start serving" >&2; return 1
}
for port in 29181 29182 29183 31181 31182 31183; do wait_serving "127.0.0.1:$port"; done

BASE_HOSTS=127.0.0.1:29181,127.0.0.1:29182,127.0.0.1:29183
THIS_HOSTS=127.0.0.1:31181,127.0.0.1:31182,127.0.0.1:31183
WORKLOADS=$(node -e 'const i=process.argv.indexOf("--workloads");console.log((i>0?process.argv[i+1]:"create-sequential,setData,getData,mixed").split(",").join(" "))' -- "$@")
REST=$(node -e 'const a=process.argv.slice(1);const i=a.indexOf("--workloads");if(i>=0)a.splice(i,2);console.log(a.join(" "))' -- "$@")
echo "# base $BASE_REV ($BASE_HOSTS) and this checkout ($THIS_HOSTS), $REPS reps, each through the SDK" >&2
for rep in $(seq 1 "$REPS"); do
  for workload in $WORKLOADS; do
    # Alternate which build goes first, so neither always runs on a warmer machine.
    order="base this"; if [ $((rep % 2)) -eq 0 ]; then order="this base"; fi
    for build in $order; do
      hosts=$BASE_HOSTS; driver=$WORK/base/dist/bench/run.js
      if [ "$build" = this ]; then hosts=$THIS_HOSTS; driver=dist/bench/run.js; fi
      # Each build's own driver, so a change to the SDK is measured as well as one to the server.
      # shellcheck disable=SC2086
      node "$driver" --connect "$hosts" --workloads "$workload" $REST | sed "s/^{/{\"build\":\"$build\",\"rep\":$rep,/" | tee -a "$WORK/results.jsonl"
    done
  done
done
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
  const rows = [];
  for (const workload of [...new Set(lines.map((l) => l.workload))]) {
    const of = (build) => lines.filter((l) => l.workload === workload && l.build === build).map((l) => l.opsPerSec);
    const [base, mine] = [of("base"), of("this")];
    rows.push({ workload, baseOpsPerSec: Math.round(median(base)), thisOpsPerSec: Math.round(median(mine)), ratio: +(median(mine) / median(base)).toFixed(3), baseRange: `${Math.round(Math.min(...base))}-${Math.round(Math.max(...base))}`, thisRange: `${Math.round(Math.min(...mine))}-${Math.round(Math.max(...mine))}` });
  }
  console.error("# medians over " + process.argv[2] + " reps, ratio = this / base");
  console.table(rows);
' "$WORK/results.jsonl" "$REPS" 1>&2
