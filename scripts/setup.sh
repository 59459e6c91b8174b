#!/usr/bin/env bash
# Set the project up (idempotent), then run or test it.
#
#   bash scripts/setup.sh              set up only
#   bash scripts/setup.sh test [ARGS]  set up, then the tests (ARGS go to pytest; see below)
#   bash scripts/setup.sh run  [ARGS]  set up, then start the player (ARGS are appended)
#
# Set-up: SWI-Prolog (Debian's swi-prolog-nox, only when `swipl` is missing; for `test` also
# Debian's chromium for the browser tests), a virtual
# environment in .venv (python3-venv from apt when `python3 -m venv` is unavailable), and
# `pip install -e '.[test]'` (repeated only when pyproject.toml changes).  Needs only bash and
# python3 >= 3.10; apt-get is used as root, or through sudo.
#
# `test` compiles the numba code once (`ggp-persona warm`, and beside it scripts/warm_tests.py
# for what only the tests call), then runs pytest twice: every test
# but the `serial` ones side by side in worker processes (pytest-xdist; GGP_TEST_WORKERS of
# them, default the cores up to 4), then the `serial` ones alone (tests/conftest.py says
# which and why).  `test -m "not slow"` is the fast tier.
set -euo pipefail

# What `run` starts: the player server on this machine only (see README for other hosts).
RUN_ARGS=(serve --host 127.0.0.1)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
ACTION="${1:-setup}"
[ $# -gt 0 ] && shift

log() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

case "$ACTION" in
  setup|test|run) ;;
  -h|--help|help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: bash scripts/setup.sh [setup|test|run] [ARGS...]" >&2; exit 2 ;;
esac

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* with your system's package manager"
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null
}

# --- system packages -------------------------------------------------------------------
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  [ "$PYTHON" = python3 ] || die "$PYTHON not found"
  apt_install python3 python3-venv
fi
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || die "Python >= 3.10 is needed; $PYTHON is $("$PYTHON" -V 2>&1)"

if ! command -v swipl >/dev/null 2>&1; then
  apt_install swi-prolog-nox
fi

# The browser tests drive Debian's Chromium through playwright (no browser download is
# possible or wanted); fonts so that rendered pages and screenshots have real glyphs.
if [ "$ACTION" = test ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium fonts-dejavu-core
fi

# --- virtual environment ----------------------------------------------------------------
# One set-up at a time per work tree (several shells may start it together).
mkdir -p "$ROOT/.cache"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/.cache/setup.lock"
  flock 9
fi
venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }
if ! venv_ok; then
  rm -rf "$VENV"
  log "creating .venv with $("$PYTHON" -V 2>&1)"
  if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 || ! venv_ok; then
    rm -rf "$VENV"     # Debian leaves a venv without pip when ensurepip is missing
    apt_install python3-venv
    "$PYTHON" -m venv "$VENV" || die "could not create a virtual environment with $PYTHON"
  fi
fi

# --- the package and its test dependencies ------------------------------------------------
STAMP="$VENV/.ggp-persona-installed"
WANT="$("$VENV/bin/python" -c 'import hashlib, sys; print(sys.version.split()[0], hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
if [ ! -x "$VENV/bin/ggp-persona" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  log "pip install -e '.[test]'"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q -e ".[test]" </dev/null
  echo "$WANT" >"$STAMP"
fi

[ -e /dev/fd/9 ] && exec 9>&-   # release the set-up lock

# --- environment for run and test -----------------------------------------------------------
export NUMBA_CACHE_DIR="$ROOT/.cache/numba"   # numba kernels use cache=True
mkdir -p "$NUMBA_CACHE_DIR"
export PATH="$VENV/bin:$PATH"

# The tests in two passes (GGP_TEST_PASS tells tests/conftest.py which tests each one keeps):
# side by side, then alone.  ARGS go to both; the last -n wins, so the second pass stays one
# process.  A pass that selects nothing (pytest's status 5: `-m "not slow"` keeps no serial
# test) is no failure; the status is the first failing pass's, or 5 when neither ran a test.
run_tests() {
  # One worker per core, at most 4 (more would share the cores with the servers the tests
  # start); GGP_TEST_WORKERS=1 runs everything in one process, as before the tiers.
  local cores; cores="$(nproc 2>/dev/null || echo 1)"; [ "$cores" -gt 4 ] && cores=4
  local workers="${GGP_TEST_WORKERS:-$cores}"
  case "$workers" in ''|*[!0-9]*) die "GGP_TEST_WORKERS must be a whole number (of processes), not '$workers'" ;; esac
  local pytest=("$VENV/bin/python" -m pytest --durations=25)
  # numba compiles the engine and search code once, here, into the cache every test process
  # reads; otherwise the first servers and web workers of the run compile it side by side
  # (minutes each on a fresh clone, and the same work several times).
  log "compiling the engine and search code (numba's cache)"
  # Beside it, the code only the tests call (the engine's kernels from Python, the build's
  # probes, the fitting's batch search: scripts/warm_tests.py), which the tests compiled
  # themselves, often on both workers at once.  At a lower priority: it takes the core the
  # warm-up's shorter half leaves idle, and does not slow the longer one.
  nice -n 10 "$VENV/bin/python" scripts/warm_tests.py &
  local warm_tests=$!
  "$VENV/bin/ggp-persona" warm || log "warm-up failed: the tests compile as they go"
  wait "$warm_tests" || log "the tests' warm-up failed: they compile what they call as they go"
  if [ "$workers" -le 1 ]; then exec "${pytest[@]}" "$@"; fi
  local rc1=0 rc2=0
  log "tests side by side on $workers workers"
  GGP_TEST_PASS=parallel "${pytest[@]}" -n "$workers" "$@" || rc1=$?
  case "$rc1" in 2|3|4) exit "$rc1" ;; esac   # interrupted, internal or usage error: stop here
  log "tests that run alone"
  GGP_TEST_PASS=serial "${pytest[@]}" "$@" -n 0 || rc2=$?
  log "side by side: exit status $rc1; alone: exit status $rc2"
  for rc in "$rc1" "$rc2"; do
    case "$rc" in 0|5) ;; *) exit "$rc" ;; esac
  done
  [ "$rc1" -eq 5 ] && [ "$rc2" -eq 5 ] && exit 5
  exit 0
}

case "$ACTION" in
  setup) log "ready: .venv is set up" ;;
  test)  run_tests "$@" ;;
  run)   exec "$VENV/bin/ggp-persona" "${RUN_ARGS[@]}" "$@" ;;
esac
