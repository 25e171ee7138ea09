"""The shape of SWE-Bench Pro's run_scripts/<instance_id>/parser.py: stdout and stderr of run_script.sh in,
{"tests": [{"name", "status"}]} out (statuses PASSED, FAILED, SKIPPED)."""

import json
import re
import sys


def parse_test_output(stdout_content, stderr_content):
    results = {}
    for line in (stdout_content + "\n" + stderr_content).splitlines():
        match = re.match(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", line)
        if match:
            status = {"PASS": "PASSED", "FAIL": "FAILED", "SKIP": "SKIPPED"}[match.group(1)]
            results[match.group(2)] = status
    return [{"name": name, "status": status} for name, status in results.items()]


def main(stdout_path, stderr_path, output_path):
    with open(stdout_path) as f:
        stdout_content = f.read()
    with open(stderr_path) as f:
        stderr_content = f.read()
    with open(output_path, "w") as f:
        json.dump({"tests": parse_test_output(stdout_content, stderr_content)}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
