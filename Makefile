# Every target does its own set-up: a fresh machine needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python setup.cfg setup.py
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(BIN)/python main.py forking 4 --demo 2000

test: venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: venv
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) *.egg-info
