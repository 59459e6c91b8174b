"""The web page's speed through its real HTTP path, for docs/benchmarks/web.md:

    .venv/bin/python scripts/bench_web.py --games ../shared/corpus/games [--runs 3] [--out FILE.json]
    .venv/bin/python scripts/bench_web.py --games ../shared/corpus/games --boards-only --out docs/benchmarks/web-boards.json
    .venv/bin/python scripts/bench_web.py --games ../shared/corpus/games --boards-only --replies 4 --out FILE.json

Each run starts ``ggp-persona web`` afresh (a new, empty log folder; the numba cache on disk
is kept: "cold" is a fresh server, not a fresh install) and measures, with httpx as the
browser would ask:
  - time to the first clickable board: POST /play to the first poll of /api/play/<id> that
    says it is the person's turn with clicks (since issue 54 while the persona still loads: the
    person's first move is taken at once), for the first ticTacToe match (cold) and the
    next one (warm), then the first connectFour match (a new game on a warm server);
  - a chess replay: GET /replay of a recorded scrambled chess match (random moves), the first
    time and again (cached), and until the check of every move on the rules is done;
  - advice: GET /api/play/<id>/persona on the person's first positions of a match of each
    game (run 1 only: a chess START waits for the grounder);
  - learn my style: a person's 6 recorded connectFour matches, POST /style to done, with the
    page's own settings (run 1 only);
  - with ``--replies N``: the persona's reply times, from the person's move to the next poll
    that lets the person click, N moves in a ticTacToe and a connectFour match per run.
Medians over the runs (advice: over the positions).  Prints a JSON summary.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.webbrowser import WebServer, person_records  # noqa: E402

ADVICE_GAMES = ["games/ticTacToe", "games/connectFour", "games/breakthrough", "games/base/nineBoardTicTacToe",
                "games/base/checkers", "games/base/chess", "games/base/hex"]
PERSONA = "champion"
REPLY_GAMES = ["games/ticTacToe", "games/connectFour"]
PLAY_CLOCK = 5      # the persona's play clock in every match ``start`` opens


def start(c: httpx.Client, key: str) -> str:
    r = c.post("/play", data={"key": key, "role": 0, "persona": PERSONA, "start_clock": 10,
                              "play_clock": PLAY_CLOCK})
    if r.status_code != 303:
        raise RuntimeError(f"{key}: the match did not start ({r.status_code})")
    return r.headers["location"].rsplit("/", 1)[1]


def wait_turn(c: httpx.Client, sid: str, limit: float = 600) -> dict | None:
    """The first poll that lets the person click (None: the match ended)."""
    t = time.monotonic()
    while time.monotonic() - t < limit:
        st = c.get(f"/api/play/{sid}").json()
        if st["status"] in ("over", "aborted"):
            return None
        if st["your_turn"] and st["clicks"]:
            return st
        time.sleep(0.1)
    raise RuntimeError(f"match {sid}: no turn in {limit:.0f} s")


def first_board(c: httpx.Client, key: str) -> float:
    t = time.monotonic()
    sid = start(c, key)
    wait_turn(c, sid)
    took = time.monotonic() - t
    c.post(f"/api/play/{sid}/resign")
    return took


def replies(c: httpx.Client, key: str, moves: int) -> list[float]:
    """The persona's reply times in one match: from the person's move (the page's POST) to the
    next poll that lets the person click again, for up to ``moves`` moves (each a random
    one of the person's clickable moves)."""
    sid = start(c, key)
    out = []
    rng = random.Random(f"{key}:{sid}")     # varied moves: always the first lost in a few
    st = wait_turn(c, sid)
    while st is not None and len(out) < moves:
        t = time.monotonic()
        r = c.post(f"/api/play/{sid}/move", json={"move": rng.choice(st["clicks"])["move"]})
        if r.status_code != 200:
            raise RuntimeError(f"{key}: the move was refused ({r.status_code}: {r.text[:200]})")
        st = wait_turn(c, sid)
        if st is not None:
            out.append(time.monotonic() - t)
    c.post(f"/api/play/{sid}/resign")
    return out


def chess_record(logs: Path, games: Path, plies: int) -> str:
    from agent.match.players import make_player
    from agent.match.runner import run_match
    sheet = sorted((games / "base/games/chess").glob("v*/*.kif"))[-1]
    asyncio.run(run_match(sheet.read_text(), [make_player("random", seed=1), make_player("random", seed=2)],
                          start_clock=30, play_clock=10, out_dir=logs, max_plies=plies, scramble=True, seed=5,
                          match_id="bench.chess"))
    return "bench.chess.json"


def replay(c: httpx.Client, name: str) -> tuple[float, float, float]:
    t = time.monotonic()
    r = c.get("/replay", params={"file": name})
    first = time.monotonic() - t
    assert r.status_code == 200 and 'id="step"' in r.text, r.text[:300]
    key = r.text.split('data-key="')[1].split('"')[0]
    while not c.get(f"/api/replay/{key}/verdict").json()["verdict"]:   # each ask waits up to 10 s
        if time.monotonic() - t > 600:
            raise RuntimeError("the replay's check on the rules did not end in 10 minutes")
    checked = time.monotonic() - t
    t = time.monotonic()
    c.get("/replay", params={"file": name})
    return first, time.monotonic() - t, checked


def advice(c: httpx.Client, key: str, positions: int = 3) -> list[float]:
    sid = start(c, key)
    out = []
    for _ in range(positions):
        st = wait_turn(c, sid)
        if st is None:
            break
        t = time.monotonic()
        a = c.get(f"/api/play/{sid}/persona")
        out.append(time.monotonic() - t)
        if a.status_code != 200:
            raise RuntimeError(f"{key}: advice failed ({a.status_code}: {a.text[:200]})")
        c.post(f"/api/play/{sid}/move", json={"move": st["clicks"][0]["move"]})
        time.sleep(0.3)
    c.post(f"/api/play/{sid}/resign")
    return out


def learn_style(c: httpx.Client) -> float:
    t = time.monotonic()
    r = c.post("/style", data={"game": "connectFour"})
    if r.status_code != 303:
        raise RuntimeError(f"learn my style did not start ({r.status_code}: {r.text[:200]})")
    jid = r.headers["location"].rsplit("/", 1)[1]
    while True:
        st = c.get(f"/api/style/{jid}").json()
        if st["status"] != "running":
            break
        time.sleep(0.5)
    if st["status"] != "done":
        raise RuntimeError(f"learn my style: {st}")
    return time.monotonic() - t


class Raw(dict):
    """The run's figures, each printed as it is measured (a long run shows its progress)."""

    def __setitem__(self, k, v):
        print(f"  {k}: {json.dumps(v) if not isinstance(v, float) else round(v, 2)}", flush=True)
        super().__setitem__(k, v)


def median(xs):
    return round(statistics.median(xs), 2) if xs else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=Path, required=True, help="the corpus games folder (chess, checkers, hex)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--plies", type=int, default=60, help="plies of the chess match replayed")
    ap.add_argument("--out", type=Path, help="write the JSON summary here too")
    ap.add_argument("--boards-only", action="store_true", help="only the time to the first clickable board")
    ap.add_argument("--replies", type=int, default=0, metavar="N",
                    help=f"also the persona's reply times: N person moves per match of {', '.join(REPLY_GAMES)} "
                         f"(play clock {PLAY_CLOCK} s)")
    a = ap.parse_args(argv)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    res: dict = {"load_before": os.getloadavg(), "cpus": os.cpu_count(), "runs": a.runs, "raw": []}
    for run in range(a.runs):
        print(f"run {run + 1} (load {os.getloadavg()[0]:.1f})", flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
            logs = Path(tmp) / "logs"
            if not a.boards_only:
                name = chess_record(logs, a.games, a.plies)
                person_records(logs, "bench", 6, game="connectFour")
            t = time.monotonic()
            server = WebServer(logs, [a.games])
            raw = Raw()
            raw["server_up"] = time.monotonic() - t
            try:
                with httpx.Client(base_url=server.url, timeout=600, follow_redirects=False) as c:
                    c.cookies.set("person", "bench")
                    raw["ticTacToe_cold"] = first_board(c, "games/ticTacToe")
                    raw["ticTacToe_warm"] = first_board(c, "games/ticTacToe")
                    raw["connectFour_first"] = first_board(c, "games/connectFour")
                    raw["connectFour_warm"] = first_board(c, "games/connectFour")
                    for k in REPLY_GAMES if a.replies else ():
                        raw[f"replies_{k.rsplit('/', 1)[1]}"] = replies(c, k, a.replies)
                    if not a.boards_only:
                        raw["replay_first"], raw["replay_cached"], raw["replay_checked"] = replay(c, name)
                    if run == 0 and not a.boards_only:
                        raw["learn_style_connectFour"] = learn_style(c)
                        raw["advice"] = {}
                        for k in ADVICE_GAMES:
                            raw["advice"][k.rsplit("/", 1)[1]] = advice(c, k)
                            print(f"  advice {k}: {[round(x, 2) for x in raw['advice'][k.rsplit('/', 1)[1]]]}", flush=True)
            finally:
                server.stop()
            res["raw"].append(dict(raw))
    keys = [k for k in res["raw"][0] if k != "advice" and not k.startswith("replies_")]
    res["median"] = {k: median([r[k] for r in res["raw"] if k in r]) for k in keys}
    # the reply times of every run together: median and longest per game
    for k in (k for k in res["raw"][0] if k.startswith("replies_")):
        xs = [x for r in res["raw"] for x in r.get(k, [])]
        res["median"][k] = {"n": len(xs), "median": median(xs), "max": round(max(xs), 2) if xs else None,
                            "play_clock": PLAY_CLOCK}
    res["advice_median"] = {g: median(v) for g, v in res["raw"][0].get("advice", {}).items()}
    res["load_after"] = os.getloadavg()
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        from agent.matchlog import atomic_write_bytes
        atomic_write_bytes(a.out, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
