"""Real repositories: SWE-bench-family instances as repair benchmarks, grading, and corpus tasks.

The eval grid's entry points:

    from terminus.swe import load_instances, instance_sandbox, grade_patch, grade_tree, patch_from_sandbox
    instances = load_instances("swebench-pro")                  # configs/benchmarks/swebench-pro.yaml
    with instance_sandbox(inst, spec, for_agent=True) as (box, workdir):  # the run's SandboxSpec, at base
        ...                                                     # the main agent works in box, at workdir
        patch = patch_from_sandbox(box, inst, workdir)
    result = grade_patch(inst, patch, spec)                     # fresh sandbox: resolved iff F2P and P2P pass
    write_predictions(records, path, "swebench")                # or "pro"
"""

from terminus.swe.benchmarks import load_benchmark_config, load_instances
from terminus.swe.environment import instance_sandbox, patch_from_sandbox
from terminus.swe.gitops import patch_from_tree
from terminus.swe.grade import grade_patch, grade_tree
from terminus.swe.predictions import read_predictions, write_predictions
from terminus.swe.record import GradeResult, RepairInstance
from terminus.swe.validate import validate_instances

__all__ = [
    "GradeResult",
    "RepairInstance",
    "grade_patch",
    "grade_tree",
    "instance_sandbox",
    "load_benchmark_config",
    "load_instances",
    "patch_from_sandbox",
    "patch_from_tree",
    "read_predictions",
    "validate_instances",
    "write_predictions",
]
