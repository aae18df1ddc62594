# gptcourse: the two commands an instructor needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint format release bench-train bench-threads bench clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gptcourse needs Python >= 3.11 (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/gptcourse demo
	@printf "\n== 3. Training the reference GPT (about 90 s on 2 free cores) on the offline default corpus\n"
	$(BIN)/gptcourse train --preset tiny --corpus default --out runs/demo

# pytest-xdist: TEST_WORKERS processes (the slow journeys wait on time limits, kernels and
# nbgrader's subprocesses: with three, the two cores were busy 1.6 of 2 on average; with four,
# 1.9, and pytest took 1,555 s where three took 1,847-1,923 s, README "The project's tests"); tests/support.py
# orders the tests (the slowest first) and schedules them in units that share a fixture
TEST_WORKERS ?= 4
test: install lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=25

# the formatter and the linter (configured in pyproject.toml); `make format` applies both
lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# never part of `make test`: the CPU preset against nanoGPT's CPU recipe (minutes)
bench-train: install
	$(BIN)/python benchmarks/train_vs_nanogpt.py

# never part of `make test`: the thread rule against torch's default, idle, beside a busy process
# and inside a CPU quota (root, for the cgroup); writes benchmarks/RESULTS_threads.md (about 10 minutes)
bench-threads: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/bench_threads.py

# never part of `make test`: grading each stage against its Gradescope zip, otter and nbgrader,
# a class of 100, check cells, BPE against Hugging Face tokenizers; writes benchmarks/RESULTS.md (15-20 minutes)
bench: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/run.py

release: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/gptcourse build

clean:
	rm -rf $(VENV) build *.egg-info
