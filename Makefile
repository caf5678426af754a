# corobench: the two commands of a fresh machine are `make bench` and `make test` (see README).
PYTHON ?= python3
VENV := .venv
COROBENCH := $(VENV)/bin/corobench
REPORT ?= report

.PHONY: bench test impl-unit-tests setup build quick seed-chain seed-tasks seed-blocking seed-echo seed-http seed-http-hosts pingpong results-site clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

# Debian packages the manifests declare (root only), then every implementation that can build here.
setup: $(VENV)/.installed
	$(COROBENCH) setup
	-$(COROBENCH) build

build: $(VENV)/.installed
	$(COROBENCH) build

# The main job: build what is needed, run the quick suite, write the report (even if a run failed).
bench: setup
	$(COROBENCH) run --suite suites/quick.toml; status=$$?; \
	$(COROBENCH) report latest --out $(REPORT) >/dev/null && echo "report: $(REPORT)/report.html ($(REPORT)/report.md)"; \
	exit $$status

# The implementations' own unit tests (so they can't rot), then the harness's tests.
impl-unit-tests:
	cd impls/rust && cargo test --locked -q -p corobench-common
	cd impls/go && go test ./... && go test -tags httpd ./...
	cd loadgen && cargo test --release --locked -q

test: setup impl-unit-tests
	$(VENV)/bin/pytest -q

seed-chain seed-tasks seed-blocking seed-echo seed-http seed-http-hosts pingpong: setup
	$(COROBENCH) run --suite suites/$@.toml; status=$$?; \
	$(COROBENCH) report latest --out $(REPORT)/$@ >/dev/null && echo "report: $(REPORT)/$@/report.html"; \
	exit $$status

# docs/results/site from the published bundles alone (import into a scratch results folder, then
# `corobench site`): the committed site is what this writes, except plotly.min.js (4.6 MB, from
# the Python plotly package), which this target puts back so the pages open from disk. The folder
# is written anew: sessions are numbered in import order, so an older build's run files would linger.
results-site: $(VENV)/.installed
	rm -rf .cache/results-site docs/results/site
	$(COROBENCH) --results .cache/results-site import docs/results/bundles/*.jsonl.gz
	$(COROBENCH) --results .cache/results-site site --out docs/results/site

clean:
	rm -rf $(VENV) results $(REPORT)
