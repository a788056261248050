# The two commands of the README: `make demo` runs the main job, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: venv demo test bench clean

$(BIN)/kitsoki-miner: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/kitsoki-miner

demo: venv
	$(BIN)/kitsoki-miner demo

test: venv
	$(BIN)/python -m pytest -q

bench: venv
	$(BIN)/python tests/bench/flows.py
	$(BIN)/python tests/bench/ingest.py
	$(BIN)/python tests/bench/mining.py
	$(BIN)/python tests/bench/apply.py
	$(BIN)/python tests/bench/server.py

clean:
	rm -rf $(VENV) build *.egg-info
