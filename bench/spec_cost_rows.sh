#!/usr/bin/env bash
# What a forward pass of n rows costs on the CPU (one sequence from an empty
# cache: the shape of a verify pass of n - 1 drafts), relative to a 1-row step:
# r(n) = t(n) / t(1), with t(n) = n / (folio bench -p n -n 0 tok/s). Builds are
# alternated within each round (noise from other work on the machine falls on
# all of them); medians over rounds.
# Usage: bench/spec_cost_rows.sh MODEL ROUNDS BUILD_DIR... > bench/results/...
set -u
M=$1; R=$2; shift 2
ROWS=${ROWS:-1 2 3 5 9}
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); model $M; rows $ROWS; $R rounds of 'folio bench -m $M -t 2 -p n -n 0 -r 10' per build: $*"
RAW=$(mktemp)
for ((round = 1; round <= R; ++round)); do
  for n in $ROWS; do
    for b in "$@"; do
      tps=$("$b/app/folio" bench -m "$M" -t 2 -p "$n" -n 0 -r 10 2>/dev/null | awk -F'|' '/ pp[0-9]/ {split($5, a, " "); print a[1]}')
      echo "raw round $round build $b rows $n tok/s $tps load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done | tee "$RAW"
awk '
  { key = $5 " " $7; v[key] = v[key] " " $9; builds[$5] = 1; rows[$7] = 1 }
  function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END {
    print "| build | rows n | median tok/s | t(n) ms | r(n) = t(n)/t(1) |"; print "|---|---|---|---|---|"
    for (b in builds) { t1 = 1000 / median(v[b " 1"])
      for (n = 1; n <= 64; ++n) if (n in rows) { m = median(v[b " " n]); t = 1000 * n / m; printf "| %s | %d | %.2f | %.2f | %.3f |\n", b, n, m, t, t / t1 } }
  }' "$RAW"
rm -f "$RAW"
