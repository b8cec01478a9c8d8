#!/usr/bin/env bash
# Runs chainsmith's fuzz targets (tests/it/fuzz.rs, proptest on stable Rust) for a CPU-time budget
# each, in rounds of fresh random cases, and prints each target's case count, CPU and wall seconds.
#
#   scripts/fuzz.sh [CPU_MINUTES_PER_TARGET] [TARGET...]     # default: 10 minutes, all six targets
#
# CHAINSMITH_FUZZ_BINARY names an already built test binary (target/release/deps/it-*) to use
# instead of building one; CHAINSMITH_FUZZ_ROUND sets the cases per round (default 2000). The
# first failure stops the run with proptest's minimal failing input on stderr (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes="${1:-10}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(protocol_loaders_take_any_file chainsmith_toml_takes_any_text
    analysis_completion_and_hover_take_any_program the_server_takes_any_byte_stream
    workspace_state_takes_any_file the_host_takes_any_message)
fi
round="${CHAINSMITH_FUZZ_ROUND:-2000}"
binary="${CHAINSMITH_FUZZ_BINARY:-}"
if [[ -z "$binary" ]]; then
  binary=$(cargo test --release --test it --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "it":
        print(m["executable"])' | tail -1)
fi
[[ -x "$binary" ]] || { echo "fuzz: no test binary (cargo test --release --test it --no-run failed?)" >&2; exit 2; }
# A name that is no target would run no case and pass in no time.
known=$("$binary" --list 2>/dev/null | sed -n 's/^fuzz::\(.*\): test$/\1/p')
for target in "${targets[@]}"; do
  grep -qx "$target" <<<"$known" || { echo "fuzz: no target named $target; the targets: $(echo $known)" >&2; exit 2; }
done

budget=$((minutes * 60))
declare -A cpu wall cases
for target in "${targets[@]}"; do cpu[$target]=0; wall[$target]=0; cases[$target]=0; done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
TIMEFORMAT='%R %U %S'
# Round-robin, so a run stopped early has spent its time evenly across the targets.
while :; do
  ran=0
  for target in "${targets[@]}"; do
    # awk, not python3, for the sums: a round of a fast target takes a tenth of a second, and
    # starting an interpreter three times per round took most of the wall time.
    awk -v cpu="${cpu[$target]}" -v budget="$budget" 'BEGIN { exit !(cpu < budget) }' || continue
    ran=1
    # The builtin `time` reports the round's wall, user and system seconds on its own stderr line.
    timing=$({ time PROPTEST_CASES="$round" "$binary" "fuzz::$target" --exact --test-threads 1 -q \
      >"$log" 2>&1; } 2>&1) || {
      cat "$log" >&2
      echo "fuzz: $target failed within $round cases after ${cases[$target]} passed" >&2
      exit 1
    }
    read -r real user sys <<<"$timing"
    cpu[$target]=$(awk -v a="${cpu[$target]}" -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", a + u + s }')
    wall[$target]=$(awk -v a="${wall[$target]}" -v r="$real" 'BEGIN { printf "%.2f", a + r }')
    cases[$target]=$((cases[$target] + round))
    echo "fuzz: $target: ${cases[$target]} cases, ${cpu[$target]} s CPU, ${wall[$target]} s wall so far"
  done
  ((ran)) || break
done
for target in "${targets[@]}"; do
  echo "fuzz: $target: ${cases[$target]} cases, ${cpu[$target]} s CPU, ${wall[$target]} s wall, no failure"
done
