# Thin wrappers: scripts/setup.sh does the (idempotent) set-up and then runs or tests.
.PHONY: setup run test

setup:
	bash scripts/setup.sh

run:
	bash scripts/setup.sh run

test:
	bash scripts/setup.sh test
