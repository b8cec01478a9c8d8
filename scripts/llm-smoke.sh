#!/usr/bin/env bash
# Checks that chainsmith works with a real local model end to end: one RestBench TMDB task goes
# through `chainsmith eval` — retrieval, the ATC draft from the model, the static check, a run
# against the mock of the TMDB API — with the model of scripts/local-llm.sh, served on its own port.
# It asserts what every working set-up gives (the model answered, its usage was counted, chainsmith
# read a program from the reply and checked it), not that a sampled program is right: how often it
# is right is docs/eval's business.
#
#   scripts/local-llm.sh setup              # once: the server and the model
#   scripts/llm-smoke.sh [CHAINSMITH_BINARY] # default target/debug/chainsmith
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-target/debug/chainsmith}"
[[ -x "$bin" ]] || { echo "llm-smoke: no chainsmith binary at $bin (cargo build first)" >&2; exit 1; }
export CHAINSMITH_LLM_PORT="${CHAINSMITH_LLM_SMOKE_PORT:-8013}"

ws=$(mktemp -d)
trap 'scripts/local-llm.sh stop >/dev/null 2>&1 || true; rm -rf "$ws"' EXIT
cp -r examples/tmdb/specs examples/tmdb/chainsmith.toml "$ws/"
scripts/local-llm.sh config >>"$ws/chainsmith.toml"
# Two calls: the draft and one more (static feedback, a revision or the judge) — about two minutes.
printf '\n[generate]\nmax_llm_calls = 2\n' >>"$ws/chainsmith.toml"

scripts/local-llm.sh start
started=$(date +%s)
"$bin" --trust eval tests/fixtures/datasets/restbench/tmdb.json --root "$ws" --tasks 0..1 --out "$ws/result.jsonl"
echo "llm-smoke: chainsmith eval took $(($(date +%s) - started)) s"

python3 - "$ws/result.jsonl" <<'PY'
import json, sys

records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert len(records) == 1, f"one task, got {len(records)} records"
r = records[0]
print(json.dumps({k: r[k] for k in ("executable", "solved", "path", "precision", "static_first", "static_last",
                                    "llm_calls", "tokens", "wall_ms", "stop")}))
print(r["program"] or "(no program)")
benign = ("the budget ran out", "every attempt failed")
assert r["stop"] is None or r["stop"].startswith(benign), f"the loop stopped on an error: {r['stop']}"
assert r["llm_calls"] >= 1, "the model was never asked"
assert r["tokens"] > 0, "no tokens counted"
assert r["static_first"] is not None and r["program"], "no program was read from the model's reply"
print("llm-smoke: ok")
PY
