#!/bin/bash
# The shape of SWE-Bench Pro's run_scripts/<instance_id>/run_script.sh for a Go repository: no arguments runs
# everything; one comma-separated argument (selected_test_files_to_run) runs those tests.
set -e

run_all_tests() {
  echo "Running all tests..."
  go test -short -v ./... 2>&1
}

run_selected_tests() {
  local test_names=("$@")
  echo "Running selected tests: ${test_names[@]}"
  local regex_pattern="^($(IFS='|'; echo "${test_names[*]}"))$"
  go test -short -v -run "$regex_pattern" ./... 2>&1
}

if [ $# -eq 0 ]; then
  run_all_tests
  exit $?
fi

if [[ "$1" == *","* ]]; then
  IFS=',' read -r -a TEST_FILES <<< "$1"
else
  TEST_FILES=("$@")
fi

run_selected_tests "${TEST_FILES[@]}"
