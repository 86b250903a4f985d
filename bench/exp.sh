set -x
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/profile_scan.cu -o /tmp/p 2>/dev/null &
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda -DGP_NO_UPPER_WAIT bench/profile_scan.cu -o /tmp/p_nowait 2>/dev/null &
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda -DGP_NO_UPPER_WAIT bench/tune_scan.cu -o /tmp/t_nowait 2>/dev/null &
wait
/tmp/p | tee $OUT/profile.log
echo "== NO UPPER WAIT (wrong results)"
/tmp/p_nowait | tee $OUT/profile-nowait.log
/tmp/t_nowait > $OUT/tune-nowait.log; grep -E "copy |cub Incl|^\| auto  |2x16 s2 b6  |NO LOOKBACK|pub. after scan" $OUT/tune-nowait.log
