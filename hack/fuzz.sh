#!/usr/bin/env bash
# Run every Go fuzz target under ./internal/... for a short time, one at a
# time (go test -fuzz takes one target in one package).
#
# Usage: hack/fuzz.sh [DURATION]   (default 5s; any -fuzztime value)
#
# Targets are found by grepping the test files for `func FuzzXxx(`, so a
# target anyone adds is run without editing this script. Every target runs
# even after one fails; the script fails if any did, or if none was found.
set -euo pipefail

fuzztime="${1:-5s}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mapfile -t files < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' ./internal | sort)
if [[ ${#files[@]} -eq 0 ]]; then
	echo "fuzz.sh: no fuzz targets found under ./internal" >&2
	exit 1
fi

# fuzz_one runs one target. Go 1.26's fuzz coordinator can end a
# duration-bound run with a bare "context deadline exceeded" when the
# -fuzztime deadline races a busy worker (golang/go#75804, fixed in Go
# 1.27): no input failed and nothing is written. Such a run is tried once
# more; a run that wrote a failing input, or any other failure, fails at
# once, and two bare deadline failures in a row fail too.
fuzz_one() {
	local pkg=$1 name=$2 log try
	log=$(mktemp)
	for try in 1 2; do
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; [[ ${PIPESTATUS[0]} -eq 0 ]]; then
			rm -f "$log"
			return 0
		fi
		if [[ $try -eq 1 ]] && grep -q 'context deadline exceeded' "$log" &&
			! grep -qE 'Failing input written|panic:|fuzz_test\.go:[0-9]+:|_test\.go:[0-9]+:' "$log"; then
			echo "fuzz.sh: $pkg $name ended on the fuzztime deadline race (golang/go#75804), with no failing input; running it once more"
			continue
		fi
		break
	done
	rm -f "$log"
	return 1
}

declare -a failed=()
count=0
declare -A seen=()
for f in "${files[@]}"; do
	pkg="./$(dirname "${f#./}")"
	while read -r name; do
		[[ -n "$name" ]] || continue
		# A name shared by two test files of one package runs once.
		[[ -z "${seen["$pkg $name"]:-}" ]] || continue
		seen["$pkg $name"]=1
		count=$((count + 1))
		echo "=== fuzz $pkg $name ($fuzztime)"
		if ! fuzz_one "$pkg" "$name"; then
			failed+=("$pkg $name")
		fi
	done < <(grep -oE '^func Fuzz[A-Za-z0-9_]*\(' "$f" | sed -e 's/^func //' -e 's/($//')
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz.sh: ${#failed[@]} of $count fuzz targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz.sh: all $count fuzz targets passed ($fuzztime each)"
