#!/bin/sh
# The committed playtest reports (docs/reports/playtest/*), sized to finish in about half an hour
# on a 2-core machine.  Each run is cached in OUT/cache, so an interrupted command resumes
# where it stopped.  Full size: --runs 50 --limit 1000 (the defaults).  Agreement: each
# replayed decision is judged by the mode of 5 seeded searches (--agreement-seeds, default 5),
# plus a retest of each persona against itself with other seeds.
# Needs ../shared (the corpus) beside the repository.
set -e
G=../shared/corpus/games/base/games
PT="${PYTHON:-.venv/bin/python} -m agent.cli playtest"
W="${WORKERS:-2}"

# one player: a puzzle
$PT $G/peg/v0/peg.kif \
  --variant 'corner-hole: -(hole d c4 empty) +(hole d c4 peg) -(hole a c3 peg) +(hole a c3 empty)' \
  --variant 'edge-hole: -(hole d c4 empty) +(hole d c4 peg) -(hole a c4 peg) +(hole a c4 empty)' \
  --runs 30 --limit 2000 --workers "$W" --title "Playtest: peg solitaire (one player)" \
  --out docs/reports/playtest/peg

# one player: a tour on a board
$PT $G/knightsTour/v0/knightsTour.kif \
  --variant 'centre-start: -(cell 1 1 knight) +(cell 3 3 knight)' \
  --variant 'two-holes: +(cell 3 2 hole) +(cell 4 4 hole)' \
  --runs 20 --limit 2000 --workers "$W" --title "Playtest: knight's tour (one player, a board)" \
  --out docs/reports/playtest/knightsTour

# two players, a board
$PT $G/breakthrough/v0/breakthrough.kif $G/breakthroughHoles/v0/breakthroughHoles.kif \
  --variant 'white-short: -(cellHolds 1 1 white) -(cellHolds 8 1 white)' \
  --runs 20 --limit 1000 --workers "$W" --title "Playtest: breakthrough (two-player board game)" \
  --out docs/reports/playtest/breakthrough

# two players: captures and piece counts (capturing every enemy pawn wins)
$PT $G/pawnWhopping/v1/pawnWhopping.kif \
  --variant 'x-short: -(cell 1 2 x) -(cell 8 2 x)' \
  --variant 'o-short: -(cell 1 7 o) -(cell 8 7 o)' \
  --runs 20 --limit 1000 --workers "$W" --title "Playtest: pawn whopping (captures and piece counts)" \
  --out docs/reports/playtest/pawnWhopping

# skill: the same personas at three search sizes (persona-model 6.6), one report
$PT $G/breakthrough/v0/breakthrough.kif \
  --personas finisher,attacker,collector --limit 100,1000,4000 \
  --runs 10 --workers "$W" --title "Playtest: breakthrough, skill sweep (100, 1000, 4000 simulations)" \
  --out docs/reports/playtest/breakthrough-skill

# two players, mandatory captures and kings
$PT $G/englishDraughts/v0/englishDraughts.kif \
  --variant 'white-king: -(cell b 1 white pawn) +(cell b 1 white king)' \
  --variant 'black-short: -(cell a 6 black pawn)' \
  --personas finisher,survivor,attacker,collector \
  --runs 10 --limit 500 --workers "$W" --title "Playtest: English draughts (captures, kings)" \
  --out docs/reports/playtest/englishDraughts

# the charge depth of the generic presets: the same four personas with the utility read at the
# end of the tree's descent (0, the presets), after 3 and 10 random moves, and after the
# champion's 100 (spec 6.5 as written); one report per depth and a summary (depth.md)
${PYTHON:-.venv/bin/python} scripts/playtest_depth.py $G/breakthrough/v0/breakthrough.kif \
  --depths 0,3,10,100 --personas finisher,survivor,attacker,collector \
  --runs 20 --limit 1000 --agreement-states 60 --workers "$W" \
  --out docs/reports/playtest/breakthrough-depth
