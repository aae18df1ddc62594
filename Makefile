# gptcourse: the two commands an instructor needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test release clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gptcourse needs Python >= 3.11 (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/gptcourse demo

test: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q

release: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/gptcourse build

clean:
	rm -rf $(VENV) build *.egg-info
