# The two commands of the README: `make demo` runs the main job, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: venv demo test test-editors screenshots vsix bench clean

$(BIN)/kitsoki-miner: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/kitsoki-miner

demo: venv
	$(BIN)/kitsoki-miner demo

# Every test, the real editors included (tests/editors: code-server in Chromium, Neovim in tmux).
test: venv
	$(BIN)/python -m pytest -q

# Only the tests in the real editors.
test-editors: venv
	$(BIN)/python -m pytest -q tests/editors tests/test_nvim_client.py tests/test_vscode_client.py

# The README's screenshots, made by the real-editor tests.
screenshots: venv
	KITSOKI_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q tests/editors

# The VS Code extension, as editors/vscode/kitsoki-miner.vsix.
vsix:
	cd editors/vscode && npm ci --no-audit --no-fund && npm run package

bench: venv
	$(BIN)/python tests/bench/flows.py
	$(BIN)/python tests/bench/flows_repo.py $(if $(KITSOKI_SRC),--repo $(KITSOKI_SRC))
	$(BIN)/python tests/bench/ingest.py
	$(BIN)/python tests/bench/mining.py
	$(BIN)/python tests/bench/apply.py
	$(BIN)/python tests/bench/server.py
	$(BIN)/python tests/bench/server_busy.py $(if $(KITSOKI_SRC),--repo $(KITSOKI_SRC))
	$(BIN)/python tests/bench/load.py
	$(BIN)/python tests/bench/gate.py
	$(BIN)/python tests/bench/adversarial.py
	$(BIN)/python tests/bench/quality.py
	$(BIN)/python tests/bench/propose.py $(if $(KITSOKI_SRC),--repo $(KITSOKI_SRC))
	$(BIN)/python tests/bench/impact.py

clean:
	rm -rf $(VENV) build *.egg-info
