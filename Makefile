# lobatto: developer entry points.
#
#   make demo    create .venv, install lobatto, run examples/cavity.toml
#   make test    create .venv, install lobatto[test] + MPICH + mpi4py, run pytest
#   make clean   remove the virtual environment and build/run outputs
#
# Needs only python3 (with venv) and a C compiler; everything else comes from
# PyPI. Installs are remembered by stamp files inside .venv, so a second run
# does not reinstall; editing pyproject.toml triggers a reinstall.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
PYTEST_ARGS ?= -q -n auto --dist loadfile --durations=30

STAMP_BASE := $(VENV)/.stamp-install
STAMP_TEST := $(VENV)/.stamp-test

.PHONY: demo test venv install install-test clean

demo: $(STAMP_BASE)
	$(BIN)/lobatto run examples/cavity.toml --output out/cavity --overwrite

test: $(STAMP_TEST)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_ARGS)

venv: $(BIN)/python

install: $(STAMP_BASE)

install-test: $(STAMP_TEST)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP_BASE): pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	@touch $@

# MPI tests need an mpiexec of the same MPI as mpi4py: the mpich wheel puts
# one in .venv/bin, which `make test` puts first on PATH.
# (This also covers the plain install that `make demo` needs.)
$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test]' mpich mpi4py
	@test -x $(BIN)/mpiexec || { echo "make: mpich did not install $(BIN)/mpiexec" >&2; exit 1; }
	@touch $(STAMP_BASE) $@

# (room for more targets, e.g. `make bench`)

clean:
	rm -rf $(VENV) build out *.egg-info src/*.egg-info .pytest_cache
