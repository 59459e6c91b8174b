#!/bin/sh
# The committed playtest reports (docs/reports/playtest/*), sized to finish in well under an
# hour on a shared 2-core machine.  Each run is cached in OUT/cache, so an interrupted
# command resumes where it stopped.  Full size: --runs 50 --limit 1000 (the defaults).
# Needs ../shared (the corpus) beside the repository.
set -e
G=../shared/corpus/games/base/games
PT="${PYTHON:-.venv/bin/python} -m agent.cli playtest"
W="${WORKERS:-2}"

$PT $G/peg/v0/peg.kif \
  --variant 'corner-hole: -(hole d c4 empty) +(hole d c4 peg) -(hole a c3 peg) +(hole a c3 empty)' \
  --variant 'edge-hole: -(hole d c4 empty) +(hole d c4 peg) -(hole a c4 peg) +(hole a c4 empty)' \
  --runs 20 --limit 200 --workers "$W" --title "Playtest: peg solitaire (one player)" \
  --out docs/reports/playtest/peg

$PT $G/breakthrough/v0/breakthrough.kif $G/breakthroughHoles/v0/breakthroughHoles.kif \
  --variant 'white-short: -(cellHolds 1 1 white) -(cellHolds 8 1 white)' \
  --runs 10 --limit 100 --workers "$W" --title "Playtest: breakthrough (two-player board game)" \
  --out docs/reports/playtest/breakthrough

$PT $G/englishDraughts/v0/englishDraughts.kif \
  --variant 'white-king: -(cell b 1 white pawn) +(cell b 1 white king)' \
  --variant 'black-short: -(cell a 6 black pawn)' \
  --runs 8 --limit 100 --workers "$W" --title "Playtest: English draughts (captures and pieces)" \
  --out docs/reports/playtest/englishDraughts
