#!/usr/bin/env bash
# Fit a model to each of the four bots of ../shared/corpus/matches, per game, and report
# them against the baselines on the later-matches test set.
#
#   bash scripts/fit_bots.sh            # the default fit (persona-model 4.6), with the GA fits
#                                       # of the same records beside it: docs/reports/fit-<game>-fast/
#                                       # (CACHE=DIR: the shared evaluations' cache; a fresh one
#                                       # times every stage from cold)
#
# The GA of persona-model 4.5, with MODE=ga:
#   MODE=ga bash scripts/fit_bots.sh            # a quick run (SIZE=small: 100 simulations, 12 x 5)
#   MODE=ga SIZE=medium bash scripts/fit_bots.sh  # 1000 simulations as the spec, a smaller GA
#                                               # (population 20, 8 generations): fit-<game>/
#   MODE=ga SIZE=full bash scripts/fit_bots.sh  # the spec's sizes: 1000 simulations, population
#                                               # 100, up to 50 generations: fit-<game>-full/
#
# Resumable: run the same command again after Ctrl-C or a crash; GA checkpoints and the
# Q-value cache live in each output folder (checkpoints/, cache/). A full run takes longer
# than one session of this machine (hours per fit), so its checkpoints are committed (small
# gzipped JSON; .gitignore) and a later clone resumes from them; the Q cache is only saved time
# (hundreds of MB) and is not: a resumed run redoes the searches it needs, same results.
# SCHEDULER=tcp://HOST:8786 sends the scoring to a Dask cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
MODE=${MODE:-fast}
SIZE=${SIZE:-small}
OUT=${OUT:-docs/reports}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.cache/numba}
if [ "$MODE" = fast ]; then
  for game in ${GAMES:-connectFour nineBoardTicTacToe}; do
    .venv/bin/ggp-persona fit "$SHARED/corpus/matches/ggp-base-local-petewall" \
      --games "$SHARED/corpus/games" --game "$game" --alias ConfidenceAgent=ConfidencePlayer \
      --drop-duplicates --out "$OUT/fit-$game-fast" --cache "${CACHE:-.cache/modelling}" \
      --workers "${WORKERS:-2}" ${SCHEDULER:+--scheduler "$SCHEDULER"} \
      --compare "$OUT/fit-$game-full" --compare "$OUT/fit-$game" \
      $([ -d "$OUT/fit-$game-thesis" ] && echo --compare "$OUT/fit-$game-thesis")
  done
  exit 0
fi
[ "$MODE" = ga ] || { echo "MODE must be fast or ga" >&2; exit 2; }
case "$SIZE" in
  small) ARGS=(--limit 100 --population 12 --generations 5 --subsample 60 --final-size 150
               --test-pms 20 --workers 0) ;;
  medium) ARGS=(--limit 1000 --population 20 --generations 8 --subsample 120 --final-size 1000
                --workers "${WORKERS:-2}") ;;
  full)  ARGS=() ;;   # the defaults are the spec's
  *) echo "SIZE must be small, medium or full" >&2; exit 2 ;;
esac
[ -n "${SCHEDULER:-}" ] && ARGS+=(--scheduler "$SCHEDULER")
for game in ${GAMES:-connectFour nineBoardTicTacToe}; do
  suffix=$([ "$SIZE" = full ] && echo "-full" || echo "")
  .venv/bin/ggp-persona fit --ga "$SHARED/corpus/matches/ggp-base-local-petewall" \
    --games "$SHARED/corpus/games" --game "$game" --alias ConfidenceAgent=ConfidencePlayer \
    --drop-duplicates --out "$OUT/fit-$game$suffix" "${ARGS[@]}"
done
