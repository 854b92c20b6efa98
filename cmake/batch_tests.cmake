# `segmux batch` on a real one-node Slurm cluster (tests/batch/slurm_array.sh: munged, slurmctld and
# slurmd in a network namespace of the test's own; faults: SIGKILL, node DOWN, scancel). Needs root
# and the Slurm packages of scripts/setup.sh; skipped (exit 77) without them.
add_test(NAME batch_slurm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/batch/slurm_array.sh)
set_tests_properties(batch_slurm PROPERTIES LABELS "slurm;slow" TIMEOUT 900 SKIP_RETURN_CODE 77
                     ENVIRONMENT "SEGMUX=$<TARGET_FILE:segmux>;SEGMUX_FIXTURES=${SEGMUX_FIXTURES}")
