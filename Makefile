# odfweb3 — two set-up commands: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODES := tests/nodes
NODES_STAMP := $(NODES)/.installed

.PHONY: demo test lint typecheck unit integration install nodes gonodes turbonode nodebuilds schemas bench clean docs diagrams fuzz

# pip -qq: errors only (setuptools' "Editable installation" notice is none; make demo stays clean).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install -qq -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# npm test node (arlocal) and the independent npm implementations used as oracles.
$(NODES_STAMP): $(wildcard $(NODES)/*/package.json) $(wildcard $(NODES)/*/package-lock.json)
	bash $(NODES)/install.sh
	touch $(NODES_STAMP)

nodes: $(NODES_STAMP)

# Debian packages the tests run for real (chromium, groff); see tools/test_packages.sh.
BROWSER_STAMP := .test-packages
$(BROWSER_STAMP): tools/test_packages.sh
	bash tools/test_packages.sh
	touch $(BROWSER_STAMP)

# Go-built test nodes (Kubo; see tools/go_nodes.sh) into .gonodes/bin. The script keeps its own
# stamp per node, keyed on version + recipe + `go version`: up to date costs a few milliseconds.
gonodes:
	bash tools/go_nodes.sh

# The Turbo bundler the tests upload through (ArDrive's turbo-upload-service, a test server
# only; see tools/turbo_node.sh), built once per machine under ~/.cache/odfweb3/turbo and
# linked into .testnodes/turbo, with Debian postgresql + redis-server. The script keeps its
# own stamp (snapshot + recipe + `node --version`).
turbonode:
	bash tools/turbo_node.sh

# On a cold machine the Go builds (compiling) and the Turbo install (mostly fetching) overlap;
# up to date, each costs milliseconds.
nodebuilds:
	$(MAKE) -j2 --output-sync=line gonodes turbonode

demo: $(STAMP)
	bash tools/demo.sh

lint: $(STAMP)
	$(BIN)/ruff check odfweb3 adapters tests tools bench
	$(BIN)/ruff format --check odfweb3 adapters tests tools bench

typecheck: $(STAMP)
	$(BIN)/mypy odfweb3 adapters/odfweb3_ipfs adapters/odfweb3_arweave

unit: $(STAMP)
	$(BIN)/pytest -q -m "not integration" tests/unit

# The suite on two pytest-xdist workers, each with its own nodes, ports and temp directories
# (docs/operations.md); WORKERS=1: serial.
WORKERS ?= 2
XDIST := $(if $(filter-out 1,$(WORKERS)),-n $(WORKERS) --dist loadgroup,)

test: $(STAMP) $(NODES_STAMP) $(BROWSER_STAMP) nodebuilds
	$(MAKE) lint typecheck docs
	$(BIN)/pytest -q -p no:cacheprovider --durations=15 $(XDIST) tests

# Regenerate the FlatBuffers code and the typed model from schemas/odf.fbs.
schemas: $(STAMP)
	bash tools/gen_schemas.sh

# The documentation site: regenerate docs/cli.md from the parser, build with --strict (any
# broken link or anchor, or page missing from the nav, fails). Diagrams: docs/img/*.svg.
docs: $(STAMP)
	$(PY) tools/gen_cli_docs.py
	$(PY) tools/gen_discovery_examples.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

diagrams: $(STAMP)
	$(PY) tools/diagrams.py

bench: $(STAMP)
	$(PY) bench/run_all.py

# Long mutation fuzz run of every decoder (1,000,000 inputs per parser; not part of `make test`).
fuzz: $(STAMP)
	$(PY) tools/fuzz.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache demo-out site
