# Two entry points for a fresh Debian 12 machine with Python 3.11 (run as root, or with sudo for apt):
#   make demo   set up .venv, install the package, run the main job on a default model
#   make test   set up .venv with the test extras and system packages, run the whole test suite
PYTHON ?= python3
# Debian packages the tests need: CMake, the Cortex-M cross compiler, its C library, and QEMU to run Cortex-M55 code.
APT_PACKAGES := cmake gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
# Running a compiled model on this PC (make demo, tvmc run) builds its C with the host gcc.
HOST_APT_PACKAGES := gcc libc6-dev
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test system-packages host-packages

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3-venv is missing: installing it with apt-get"; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv && $(PYTHON) -m venv $(VENV); }

$(INSTALLED): setup.py | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@# An editable install leaves the package uncompiled; a process that may not write bytecode would compile
	@# every module on each start (0.1 s of tvmc's).
	$(PY) -m compileall -q python/ethosu_tvm
	@touch $@

demo: $(INSTALLED) host-packages
	$(PY) tutorials/compile_and_run.py

# apt-get install whichever of the listed Debian packages are missing.
define apt_install
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing $$missing with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

host-packages:
	$(call apt_install,$(HOST_APT_PACKAGES))

system-packages: host-packages
	$(call apt_install,$(APT_PACKAGES))

# Tests needing the real model files skip without them (-rs lists why), except in CI (CI=true), where they fail.
test: $(INSTALLED) system-packages
	$(PY) -m pytest -q -rs tests
