#!/usr/bin/env bash
# CPU time of a forward pass of n rows (one sequence from an empty cache, the
# shape of a verify pass of n - 1 drafts) with ONE thread, for builds side by
# side: robust where wall time is not, on a machine that other work shares
# (a thread waiting for a core costs no CPU time; one thread has no pool to
# spin). Per forward = (CPU of 'bench -p n -n 0 -r 1+M' - CPU of '-r 1') / M,
# user + system from GNU time; r_cpu(n) = that / the 1-row one.
# Usage: bench/spec_cost_rows_cpu.sh MODEL M BUILD_DIR...
set -u
M=$1; REPS=$2; shift 2
ROWS=${ROWS:-1 2 3 5 9}
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); model $M; -t 1; rows $ROWS; $REPS forwards per point; builds: $*"
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
echo "| build | rows n | CPU ms per forward | r_cpu(n) |"
echo "|---|---|---|---|"
for b in "$@"; do
  one=""
  for n in $ROWS; do
    base=$(cpu "$b/app/folio" bench -m "$M" -t 1 -p "$n" -n 0 -r 1)
    full=$(cpu "$b/app/folio" bench -m "$M" -t 1 -p "$n" -n 0 -r $((REPS + 1)))
    ms=$(awk -v a="$full" -v b="$base" -v m="$REPS" 'BEGIN { printf "%.2f", 1000 * (a - b) / m }')
    [[ -z "$one" ]] && one=$ms
    echo "| $b | $n | $ms | $(awk -v a="$ms" -v b="$one" 'BEGIN { printf "%.3f", a / b }') |"
  done
done
