# corobench: the two commands of a fresh machine are `make bench` and `make test` (see README).
PYTHON ?= python3
VENV := .venv
COROBENCH := $(VENV)/bin/corobench
REPORT ?= report

.PHONY: bench test impl-unit-tests setup build quick seed-chain seed-tasks seed-blocking seed-echo seed-http seed-http-hosts pingpong clean

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

clean:
	rm -rf $(VENV) results $(REPORT)
