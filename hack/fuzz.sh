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
		if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
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
