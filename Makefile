# Two entry points for a fresh Debian 12 machine with Python 3.11 (run as root, or with sudo for apt):
#   make demo   set up .venv, install the package, run the main job on a default model
#   make test   set up .venv with the test extras and system packages, run the whole test suite
PYTHON ?= python3
# Debian packages the tests need: the Cortex-M cross compiler and its C library.
APT_PACKAGES := gcc-arm-none-eabi libnewlib-arm-none-eabi
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test system-packages

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3-venv is missing: installing it with apt-get"; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv && $(PYTHON) -m venv $(VENV); }

$(INSTALLED): setup.py | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

demo: $(INSTALLED)
	$(PY) tutorials/factory_and_references.py

system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing $$missing with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

test: $(INSTALLED) system-packages
	$(PY) -m pytest -q tests
