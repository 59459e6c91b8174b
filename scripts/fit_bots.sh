#!/usr/bin/env bash
# Fit a persona to each of the four bots of ../shared/corpus/matches, per game, and report
# them against the baselines on the later-matches test set (docs/reports/fit-<game>/).
#
#   bash scripts/fit_bots.sh            # a quick run (SIZE=small: 100 simulations, 12 x 5)
#   SIZE=medium bash scripts/fit_bots.sh  # the committed reports: 1000 simulations as the
#                                       # spec, a smaller GA (population 20, 8 generations)
#   SIZE=full bash scripts/fit_bots.sh  # the spec's sizes: 1000 simulations, population 100,
#                                       # up to 50 generations, 300 decisions per generation
#
# Resumable: run the same command again after Ctrl-C or a crash; GA checkpoints and the
# Q-value cache live in each output folder (checkpoints/, cache/). A full run takes longer
# than one session of this machine (hours per fit), so its checkpoints are committed (small
# JSON; .gitignore) and a later clone resumes from them; the Q cache is only saved time
# (hundreds of MB) and is not: a resumed run redoes the searches it needs, same results.
# SCHEDULER=tcp://HOST:8786 sends the scoring to a Dask cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
SIZE=${SIZE:-small}
case "$SIZE" in
  small) ARGS=(--limit 100 --population 12 --generations 5 --subsample 60 --final-size 150
               --test-pms 20 --workers 0) ;;
  medium) ARGS=(--limit 1000 --population 20 --generations 8 --subsample 120 --final-size 1000
                --workers "${WORKERS:-2}") ;;
  full)  ARGS=() ;;   # the defaults are the spec's
  *) echo "SIZE must be small, medium or full" >&2; exit 2 ;;
esac
OUT=${OUT:-docs/reports}
[ -n "${SCHEDULER:-}" ] && ARGS+=(--scheduler "$SCHEDULER")
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.cache/numba}
for game in ${GAMES:-connectFour nineBoardTicTacToe}; do
  suffix=$([ "$SIZE" = full ] && echo "-full" || echo "")
  .venv/bin/ggp-persona fit "$SHARED/corpus/matches/ggp-base-local-petewall" \
    --games "$SHARED/corpus/games" --game "$game" --alias ConfidenceAgent=ConfidencePlayer \
    --drop-duplicates --out "$OUT/fit-$game$suffix" "${ARGS[@]}"
done
