nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/profile_scan.cu -o /tmp/p 2>/dev/null &
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_scan.cu -o /tmp/t 2>/dev/null &
PYTEST_ADDOPTS='-n 8 -k "not emulator"' bash bench/gpu_run.sh wheels tests-scan
wait
/tmp/p | tee $OUT/profile.log
/tmp/t | tee $OUT/tune.log
