#!/usr/bin/env bash
# make bench: the benchmarks that say how addonwall performs, with walled
# against unwalled and peers measured in the same run and shown as ratios.
# The machine is small and noisy: read ratios, not absolute times.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
out=${BENCH_OUT:-.cache/bench/report.txt}
mkdir -p "$(dirname "$out")"
count=${BENCH_COUNT:-1}
run() { # package, pattern, benchtime
  go test -run '^$' -bench "$2" -benchtime "$3" -count "$count" "$1" 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true
}
ratios() { # benchmark lines → one line a run: both rates and the ratio against the issue's target
  echo "$1" | awk '/^BenchmarkEntryTransfer/ {
    for (i = 2; i <= NF; i++) m[$i] = $(i-1)
    printf "entry transfer %.0f MiB: walled %s MB/s, direct %s MB/s, walled/direct %s (target >= 0.70)\n", m["bytes/op"] / 1048576, m["walled-MB/s"], m["direct-MB/s"], m["walled/direct"]
  }'
}
{
  echo "# addonwall bench, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(uname -r)"
  echo "## connect → MCP initialize: walled vs unwalled vs direct vs srt (ms, p50; ratios)"
  run ./test/bench BenchmarkConnectInitialize "${BENCH_CONNECT_N:-20}x"
  echo "## store: create/update/get/list with 1,000 objects; hand edit → watch event"
  run ./internal/store 'BenchmarkStore' 1s
  echo "## hand edit of a store file → reconciled status (p50, p95)"
  run ./test/bench BenchmarkHandEditToStatus 50x
  echo "## controller RSS idle with 500 AddonWalls"
  run ./test/bench BenchmarkIdleRSS500 1x
  echo "## relay: proxy → relay → target vs direct loopback; one CONNECT's added latency"
  run ./internal/egress 'BenchmarkRelay' 3x
  echo "## 1 GiB through the entry's proxy → relay → loopback target vs direct loopback, interleaved"
  entry=$(run ./internal/wallentry BenchmarkEntryTransfer 3x)
  echo "$entry"
  ratios "$entry"
  echo "## listener-owner check with 0, 1,000 and 2,000 extra processes"
  run ./internal/listener BenchmarkListenerCheck 30x
} | tee "$out"
echo "report: $out"
