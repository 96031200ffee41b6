# cmake -DFUZZER=... -DSEEDS=dir -DREGRESSIONS=dir -DWORK=dir -DSECONDS=n -P run_fuzzer.cmake
# Runs a libFuzzer binary for a bounded time on a fresh copy of the seed
# corpus (the source tree is never written), plus the saved regressions.
# Crashing inputs land in WORK/artifacts/; copy them to REGRESSIONS. The seed
# is fixed so that a CI run explores the same inputs every time (a slower
# machine a prefix of them): a red run means a change, not luck. Explore
# further by hand with another -seed or a longer -max_total_time.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${SEEDS}/*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" "${WORK}/corpus" "${REGRESSIONS}"
          -seed=1 -max_total_time=${SECONDS} -rss_limit_mb=2048 -timeout=10 -max_len=65536
          -artifact_prefix=${WORK}/artifacts/ -print_final_stats=1
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "fuzzer failed (exit ${result}); the crashing input is in ${WORK}/artifacts/")
endif()
