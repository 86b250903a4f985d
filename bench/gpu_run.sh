#!/usr/bin/env bash
# One call on the GPU machine: build for sm_90, run the tests (GPU ones
# included), compute-sanitizer over every variant, then the benchmark.
# Logs go to $OUT (the device tool brings them back).  Usage:
#   bash bench/gpu_run.sh [wheels|tests|tests-FILE|sanitize|tune|tune-reduce-loads|tune-reduce-shapes|tune-axis|tune-colscan|tune-quad|tune-scan|tune-scan8|tune-scan8-evict|tune-scan8-parts|tune-scan8-hops|tune-scan8-small|tune-scan8-runs|tune-scan8-runs2|tune-scan8-where|tune-rfa-scan|tune-rfa-scan-mid|tune-rfa-scan-big|profile-scan|profile-flat|tune-transpose|tune-nd|tune-rfa|tune-segscan-packs|tune-segscan-long|tune-segflat-packs|bench|bench-axis|bench-calls|bench-reduce-dtypes|bench-segments|bench-scan-segments|bench-transpose|bench-scan|bench-scan-wide|bench-dask|bench-host|ncu|main|notebooks|slow ...]   (default: tests sanitize bench)
# wheels: install the carried .whl/*.whl (nbclient, ipykernel, matplotlib ...; dask, distributed,
# dask-cuda and their missing dependencies for the dask steps) into /tmp/site, with no index and no
# dependency resolution, and put it on PYTHONPATH for the later steps (and the dask workers they
# start); tests-FILE runs tests/test_FILE.py (tests-helpers, tests-notebooks ...); the dask tests and
# benchmark on the 2-GPU machine in one call: bash bench/gpu_run.sh wheels tests-dask bench-dask;
# SANITIZE_FAMILIES="scan transpose" limits the sanitize step to those families.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuprims-out}; mkdir -p "$OUT"
steps=${*:-"tests sanitize bench"}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== build"
t0=$(date +%s)
# The CCCL headers of the CUB baselines (a build requirement that
# --no-build-isolation does not fetch): the carried nvidia-cuda-cccl wheel.
if ls .whl/nvidia_cuda_cccl-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps .whl/nvidia_cuda_cccl-*.whl || echo "nvidia-cuda-cccl did not install"
fi
if ! GPUPRIMS_CUDA_ARCH=${GPUPRIMS_CUDA_ARCH:-90} python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s; $(grep -o 'the CUB baselines: .*' "$OUT/build.log" | head -1)"
# bench/SRC.cu built for sm_90 (further nvcc flags after LOG) and run with $RUN_ARGS, its output also
# in $OUT/LOG.log.
tune_prog() {
  local src=$1 log=$2; shift 2
  nvcc -O3 -std=c++17 -arch=sm_90 -Icuda "bench/$src.cu" "$@" -o "/tmp/$src" && "/tmp/$src" ${RUN_ARGS:-} | tee "$OUT/$log.log"
}
# The CCCL 3.5 headers of the installed nvidia-cuda-cccl wheel (CUB's determinism requirements).
cccl_include() {
  python3 -c "import sys, glob; print(sorted(g for p in sys.path for g in glob.glob(p + '/nvidia/cu*/include/cccl'))[-1])"
}
rc=0
for step in $steps; do
  echo "== $step"
  case $step in
    wheels) if ls .whl/*.whl >/dev/null 2>&1; then
              python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
                && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} && echo "installed $(ls .whl/*.whl | wc -l) wheels"
            else echo "no .whl/ here"; fi ;;
    main)  t1=$(date +%s)
           python3 -m gpuprims --json "$OUT/main.json" --plot "$OUT/main.png" 2>"$OUT/main-stderr.log" | tee "$OUT/main.log"
           r=${PIPESTATUS[0]}; echo "python -m gpuprims took $(( $(date +%s) - t1 )) s (exit $r)"
           [ $r -eq 0 ] || { tail -5 "$OUT/main-stderr.log"; rc=1; } ;;
    notebooks) python3 -m pytest -q -rs tests/test_notebooks.py >"$OUT/pytest-notebooks.log" 2>&1; r=$?
           tail -8 "$OUT/pytest-notebooks.log"; [ $r -eq 0 ] || rc=1 ;;
    tests) python3 -m pytest -q -rs --maxfail=20 tests >"$OUT/pytest.log" 2>&1; r=$?
           tail -25 "$OUT/pytest.log"; [ $r -eq 0 ] || rc=1 ;;
    tests-*) python3 -m pytest -q -rs --maxfail=20 "tests/test_${step#tests-}.py" >"$OUT/pytest-${step#tests-}.log" 2>&1; r=$?
           tail -6 "$OUT/pytest-${step#tests-}.log"; [ $r -eq 0 ] || rc=1 ;;
    slow)  python3 -m pytest -q -rs --runslow -m slow tests >"$OUT/pytest-slow.log" 2>&1; r=$?
           tail -8 "$OUT/pytest-slow.log"; [ $r -eq 0 ] || rc=1 ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        # synccheck tracks every bulk copy's mbarrier: its default table overflows on the scans
        # (a warning, then a launch fails under the tool)
        extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 100000"
        compute-sanitizer --tool $tool $extra --error-exitcode 9 python3 bench/sanitize.py ${SANITIZE_FAMILIES:-} \
          >"$OUT/sanitize-$tool.log" 2>&1; r=$?
        echo "$tool: exit $r; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|wrong|all results' "$OUT/sanitize-$tool.log" | tr '\n' ' ')"
        [ $r -eq 0 ] || rc=1
      done ;;
    tune)  tune_prog tune_reduce tune-reduce ;;
    tune-reduce-loads) RUN_ARGS=loads tune_prog tune_reduce tune-reduce-loads ;;
    tune-reduce-shapes) RUN_ARGS=shapes tune_prog tune_reduce tune-reduce-shapes ;;
    profile-scan) tune_prog profile_scan profile-scan ;;
    profile-flat) RUN_ARGS=flat tune_prog profile_scan profile-flat ;;
    tune-axis) tune_prog tune_axis tune-axis ;;
    tune-colscan) tune_prog tune_colscan tune-colscan ;;
    tune-quad) RUN_ARGS=quad tune_prog tune_colscan tune-quad ;;
    tune-scan) tune_prog tune_scan tune-scan ;;
    tune-rfa-scan) tune_prog tune_rfa_scan tune-rfa-scan -I"$(cccl_include)" ;;
    tune-rfa-scan-mid) RUN_ARGS=mid tune_prog tune_rfa_scan tune-rfa-scan-mid -I"$(cccl_include)" ;;
    tune-rfa-scan-big) RUN_ARGS=big tune_prog tune_rfa_scan tune-rfa-scan-big -I"$(cccl_include)" ;;
    tune-scan8) tune_prog tune_scan8 tune-scan8 -I"$(cccl_include)" ;;
    tune-scan8-evict) RUN_ARGS=evict tune_prog tune_scan8 tune-scan8-evict -I"$(cccl_include)" ;;
    tune-scan8-parts) RUN_ARGS=parts tune_prog tune_scan8 tune-scan8-parts -I"$(cccl_include)" ;;
    tune-scan8-hops) RUN_ARGS=hops tune_prog tune_scan8 tune-scan8-hops -I"$(cccl_include)" ;;
    tune-scan8-small) RUN_ARGS=small tune_prog tune_scan8 tune-scan8-small -I"$(cccl_include)" ;;
    tune-scan8-runs) RUN_ARGS=runs tune_prog tune_scan8 tune-scan8-runs -I"$(cccl_include)" ;;
    tune-scan8-runs2) RUN_ARGS=runs2 tune_prog tune_scan8 tune-scan8-runs2 -I"$(cccl_include)" ;;
    tune-scan8-where) RUN_ARGS=where tune_prog tune_scan8 tune-scan8-where -I"$(cccl_include)" ;;
    tune-transpose) tune_prog tune_transpose tune-transpose -lcublas ;;
    tune-nd) tune_prog tune_nd tune-nd ;;
    tune-rfa) tune_prog tune_rfa tune-rfa -I"$(cccl_include)" ;;
    bench) python3 bench/bench_reduce.py 2>&1 | tee "$OUT/bench.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-axis) python3 bench/bench_reduce.py --axis 2>&1 | tee "$OUT/bench-axis.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-scan) python3 bench/bench_scan.py 2>&1 | tee "$OUT/bench-scan.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-scan-wide) python3 bench/bench_scan.py wide 2>&1 | tee "$OUT/bench-scan-wide.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    ncu)   # shared-memory bank conflicts: blelloch vs blelloch_padded, tiled vs tiled_padded
           ncu --clock-control none --csv --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum \
               -k regex:'blelloch|tiled' python3 bench/bank_conflicts.py >"$OUT/ncu.csv" 2>"$OUT/ncu.log"; r=$?
           python3 bench/bank_conflicts.py --table "$OUT/ncu.csv" | tee "$OUT/bank-conflicts.md"; [ $r -eq 0 ] || rc=1 ;;
    bench-dask) python3 bench/bench_dask.py ${BENCH_DASK_ARGS:-} 2>&1 | tee "$OUT/bench-dask.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-host) python3 bench/bench_host.py >"$OUT/bench-host.txt" 2>&1; r=$?
           grep -E "^\| (sum|cumsum|transpose|to_device|DeviceArray)" "$OUT/bench-host.txt"; [ $r -eq 0 ] || rc=1 ;;
    bench-calls) python3 bench/bench_dtypes.py --calls 2>&1 | tee "$OUT/bench-calls.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-reduce-dtypes) python3 bench/bench_dtypes.py --reduce 2>&1 | tee "$OUT/bench-reduce-dtypes.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-segments) python3 bench/bench_reduce.py --axis --segments 2>&1 | tee "$OUT/bench-segments.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    bench-scan-segments) python3 bench/bench_scan.py batched --cases segments --rows segmented_adaptive,segmented_lookback 2>&1 \
             | tee "$OUT/bench-scan-segments.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
    tune-segscan-packs) RUN_ARGS=packs tune_prog tune_segscan tune-segscan-packs ;;
    tune-segscan-long) RUN_ARGS=long tune_prog tune_segscan tune-segscan-long ;;
    tune-segflat-packs) RUN_ARGS=packs tune_prog tune_segflat tune-segflat-packs ;;
    bench-transpose) python3 bench/bench_transpose.py 2>&1 | tee "$OUT/bench-transpose.log"; [ ${PIPESTATUS[0]} -eq 0 ] || rc=1 ;;
  esac
done
# At most 8 files come back: pack the logs into one archive, keep results apart.  An archive
# already there (an earlier call's, or a wrapper's logs packed by an inner call) is unpacked
# first, so that no log is lost.
(cd "$OUT" && { [ ! -f logs.tgz ] || tar xzf logs.tgz; } && ls *.log >/dev/null 2>&1 &&
  tar czf logs.tgz *.log && rm -f *.log)
exit $rc
