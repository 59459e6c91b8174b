#!/usr/bin/env bash
# busy_host_chess.sh GS [N]
# Chess under ggp-base's GameServer at 30/5 on a busy host (issue 53): our server at nice 19
# with an empty engine cache (the grounder builds during the match), beside 4 CPU-bound
# processes, against ggp-base's random player; N matches (default 1), our server white.
# GS: the kit's build folder (../shared/tools/sancho/README.md, step 1).  Writes under GS/busy:
# the load at each match's start and end (load.txt), the manager's results (GS/results) and
# our records (GS/busy/logs); the report reads x-unsearched, x-engine and x-notes from them.
set -u
GS=$(cd "$1" && pwd); N=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd); KIT=$ROOT/../shared/tools/sancho
KIF=$(ls -d "$ROOT"/../shared/corpus/games/base/games/chess/v*/chess.kif | sort | tail -1)
rm -rf "$GS/busy" && mkdir -p "$GS/busy/logs" "$GS/busy/cache"
# each burner in a session of its own, as other users' jobs on a shared host are: with the
# kernel's autogroup scheduling, nice weighs only within a session, and four nice-0 burners in
# our own session would leave a nice-19 server under 1 % of a core (it never answered INFO)
for i in 1 2 3 4; do setsid python3 -c "while True: pass" & echo $! >> "$GS/busy/burners"; done
cd "$ROOT"
GGP_PERSONA_CACHE=$GS/busy/cache nice -n 19 .venv/bin/ggp-persona serve --port 9147 --log-dir "$GS/busy/logs" \
  > "$GS/busy/us.log" 2>&1 &
US=$!
bash "$KIT/opponent.sh" "$GS" random 9148 > "$GS/busy/random.log" 2>&1 &
OPP=$!
trap 'kill $(cat "$GS/busy/burners") $US $OPP 2>/dev/null' EXIT
for i in $(seq 1 180); do   # until our server answers INFO
  curl -s -m 5 -d '( INFO )' http://127.0.0.1:9147/ | grep -q available && break
  sleep 5
done
echo "server up after $((i*5)) s: $(uptime)" >> "$GS/busy/load.txt"
for n in $(seq 1 "$N"); do
  uptime >> "$GS/busy/load.txt"
  bash "$KIT/match.sh" "$GS" "chess.busy.$n" "$KIF" 30 5 127.0.0.1:9147 127.0.0.1:9148 >> "$GS/busy/matches.txt" 2>&1
  uptime >> "$GS/busy/load.txt"
done
