#!/bin/sh
# One fuzz campaign: every target in turn, one process at a time, at the lowest priority.
#   fuzz/campaign.sh [SECONDS_PER_TARGET] [WORK_DIR] [TARGET...]
# Resumable: each target's corpus grows in WORK_DIR/corpus/<target>; rerun to go on.
# A crash stops libFuzzer: the input is kept in WORK_DIR/artifacts and the target restarts on its
# corpus until its seconds are used. Logs (with each run's exec count) in WORK_DIR/logs.
set -u
secs=${1:-600}
work=${2:-/tmp/onemodel-fuzz}
shift 2 2>/dev/null || shift $#
targets=${*:-"ort onemodel onnx patch writer ort_writer text"}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work/logs" "$work/artifacts"
for t in $targets; do
    c="$work/corpus/$t"
    [ -d "$c" ] || python "$here/run.py" "$t" --seed "$c"
    end=$(( $(date +%s) + secs ))
    while [ "$(date +%s)" -lt "$end" ]; do
        left=$(( end - $(date +%s) ))
        log="$work/logs/$t-$(date -u +%Y%m%dT%H%M%S).log"
        nice -n 19 python "$here/run.py" "$t" "$c" -max_total_time="$left" -timeout=60 -rss_limit_mb=2048 \
            -max_len=1048576 -len_control=200 -print_final_stats=1 \
            -artifact_prefix="$work/artifacts/$t-" > "$log" 2>&1
        echo "$t: exit $? $(grep -h 'stat::number_of_executed_units' "$log")"
    done
done
