# The two commands of the README are `make demo` and `make test`; both set everything up themselves.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
# Lambda runs python3.13 (infra/powertools_function.py), so the venv, the tests and the local stack do too.
# The first interpreter of that version found: pyenv's, python3.13 on PATH, python3; or set PYTHON=...
PYTHON_VERSION := 3.13
IS_PYTHON_VERSION := 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$(PYTHON_VERSION)")'
PYTHON ?= $(shell for candidate in "$$(pyenv prefix $(PYTHON_VERSION) 2>/dev/null)/bin/python3" \
	python$(PYTHON_VERSION) python3; do "$$candidate" -c $(IS_PYTHON_VERSION) 2>/dev/null \
	&& { command -v "$$candidate"; break; }; done)
STAMP := .make
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export AWS_DEFAULT_REGION ?= us-east-1
# The local stack and the tests never reach AWS: a stray call fails on these fake credentials.
LOCAL_AWS := AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing

.PHONY: dist help setup demo serve test test-slow test-unit test-integration test-infra lint synth bootstrap diff deploy bench lock clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(STAMP)/python$(PYTHON_VERSION): requirements.txt requirements-cdk.txt requirements-dev.txt constraints.txt
	@mkdir -p $(STAMP)
	@# Set-up talks on stderr: `make serve`'s stdout carries only its READY line, even on a fresh machine.
	@test -n "$(PYTHON)" || { echo "Python $(PYTHON_VERSION) (the Lambda runtime's) is needed: install it" \
		"(e.g. 'pyenv install $(PYTHON_VERSION)') or name it with PYTHON=/path/to/python3" >&2; exit 1; }
	@echo "setting up .venv with $(PYTHON) (pinned Python dependencies) ..." >&2
	@# A venv of another Python (an older checkout's) is replaced, not reused.
	@$(PY) -c $(IS_PYTHON_VERSION) 2>/dev/null || { rm -rf $(VENV) && "$(PYTHON)" -m venv $(VENV); }
	@$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt >&2
	@# functions/ is the Lambda asset root: put it (and the repo root) on the venv's path, so that
	@# `indexer.handler` imports the same way in tests, the local stack and Lambda.
	@$(PY) -c 'import pathlib, site; pathlib.Path(site.getsitepackages()[0], "s3_file_search.pth").write_text("$(CURDIR)/functions\n$(CURDIR)\n")'
	@touch $@

$(STAMP)/node: package.json package-lock.json
	@mkdir -p $(STAMP)
	@echo "installing node_modules (the pinned CDK CLI and DynamoDB Local) ..." >&2
	@npm ci --no-audit --no-fund --loglevel=error >&2
	@touch $@

# The browser tests drive Debian's Chromium (never a browser Playwright downloads) and open the page's zips
# with Debian's unzip: installed when missing
# and this is a Debian machine where we are root; otherwise the tests say in one line why they skip.
CHROMIUM ?= /usr/bin/chromium
$(STAMP)/browser:
	@mkdir -p $(STAMP)
	@if [ ! -x "$(CHROMIUM)" ] || ! command -v unzip >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Debian's chromium (and unzip, which opens the page's zips) for the browser tests ..." >&2; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium unzip; } >&2 \
				|| echo "could not install chromium: the browser tests will skip (fail under CI=true)" >&2; \
		else \
			echo "no chromium at $(CHROMIUM) (apt-get install chromium): the browser tests will skip" >&2; \
		fi; \
	fi
	@touch $@

setup: $(STAMP)/python$(PYTHON_VERSION) $(STAMP)/node $(STAMP)/browser  ## create the venv; install pinned Python and Node deps and Chromium

demo: setup  ## run the local stack, upload, delete, search, print, stop
	$(LOCAL_AWS) $(PY) -m local_stack.demo

serve: setup  ## keep the local stack up (API_PORT, AWS_PORT, TABLE_ENGINE); prints READY {json}
	@# The stack stops with status 0 on SIGTERM, but make then dies of the signal itself (143): scripts
	@# that need status 0 run `$(PY) -m local_stack.serve` directly.
	@$(LOCAL_AWS) $(PY) -m local_stack.serve

test: setup  ## unit, integration, infrastructure and browser tests (all but the slow tier)
	$(LOCAL_AWS) $(PY) -m pytest -n 2 --dist loadgroup --durations=15 -m "not slow"

test-slow: setup  ## the slow tier: emulator property tests, wheel builds, bench runs (CI runs it after test)
	$(LOCAL_AWS) $(PY) -m pytest -n 2 --dist loadgroup --durations=15 -m slow

test-unit: setup
	$(LOCAL_AWS) $(PY) -m pytest tests/unit

test-integration: setup
	$(LOCAL_AWS) $(PY) -m pytest -n 2 --dist loadgroup tests/integration

test-infra: setup
	$(PY) -m pytest tests/infra

lint: setup  ## ruff, mypy and the import contracts (pyproject.toml: which layer may import which)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	PYTHONPATH=functions:. $(VENV)/bin/lint-imports

synth: setup  ## synthesize the CloudFormation template into cdk.out/
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk synth --quiet

# The pinned CDK CLI with the project's Python, as `synth`; CDK_ARGS passes more (e.g. CDK_ARGS="--profile prod").
bootstrap: setup  ## once per account and region: npx cdk bootstrap
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk bootstrap $(CDK_ARGS)

diff: setup  ## what a deploy would change: npx cdk diff
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk diff $(CDK_ARGS)

deploy: setup  ## deploy the stack with your AWS credentials: npx cdk deploy
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk deploy $(CDK_ARGS)

bench: setup  ## print the benchmark table (figures, side by side) and draw its charts into bench/charts/
	$(LOCAL_AWS) $(PY) -m bench

dist: setup  ## build the wheels of the client (s3-file-search) and the admin tools (s3-file-search-admin) into dist/
	@# Their build backend (setuptools, out of the tree) leaves no build/ or *.egg-info in the checkout.
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist ./file_search_client ./file_search_admin
	@ls dist/*.whl

lock:  ## re-pin every transitive Python dependency into constraints.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	{ echo "# Every transitive Python dependency, pinned: installs use -c constraints.txt. Regenerate with 'make lock'."; \
	  $(PY) -m pip freeze --exclude-editable | sort -f; } > constraints.txt

clean:  ## remove the venv, node_modules and build output
	rm -rf $(VENV) node_modules cdk.out $(STAMP) .pytest_cache .mypy_cache .ruff_cache .hypothesis
