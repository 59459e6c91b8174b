// ggp-persona web page: polls the match state, draws it, and turns clicks into moves.
// No framework and no build step: the boards arrive as SVG from the server.
"use strict";
const GGP = (() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };

  // The boards are as tall as the window below their top allows (style.css): that top is
  // measured here, since what stands above them differs from page to page.
  function fitBoards() {
    const b = $("boards");
    if (b) document.documentElement.style.setProperty("--board-top", `${Math.round(b.getBoundingClientRect().top + window.scrollY)}px`);
  }
  window.addEventListener("resize", fitBoards);

  function showPosition(pos) {
    $("boards").innerHTML = pos.boards.join("");
    $("noboard").hidden = pos.boards.length > 0;
    fitBoards();
    const others = $("others"); others.innerHTML = "";
    for (const f of pos.others) others.appendChild(el("li", f));
  }

  // ------------------------------------------------------------------ play
  function play(sid) {
    let last = null, pending = [], clicks = [], sending = false, deadline = null;

    async function send(move) {
      if (sending) return;
      sending = true;
      $("pending").textContent = "sending " + move;
      try {
        const r = await fetch(`/api/play/${sid}/move`, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({move})});
        if (!r.ok) { $("pending").textContent = (await r.json()).error || "move refused"; }
        else { $("pending").textContent = "sent " + move; $("moves").innerHTML = ""; clicks = []; mark(); }
      } finally { sending = false; poll(); }
    }

    const same = (a, b) => a[0] === b[0] && a[1] === b[1];
    function candidates(path) {  // moves whose click sequence starts with path
      return clicks.filter((c) => {
        if (c.column !== null && path.length === 1) return path[0][0] === c.column;
        return c.cells.length >= path.length && path.every((p, i) => same(p, c.cells[i]));
      });
    }
    function exact(path) {
      return candidates(path).filter((c) => (c.column !== null && path.length === 1) || c.cells.length === path.length);
    }
    function mark() {  // highlight the cells that can be clicked next
      const board = document.querySelector('svg.board[data-board="0"]');
      if (!board) return;
      for (const r of board.querySelectorAll(".cell")) {
        const xy = [+r.dataset.x, +r.dataset.y];
        const next = candidates(pending.concat([xy])).length > 0;
        r.classList.toggle("clickable", next);
        r.classList.toggle("chosen", pending.some((p) => same(p, xy)));
      }
    }
    function onClick(ev) {
      const r = ev.target.closest(".cell");
      if (!r || !r.closest('svg.board[data-board="0"]')) return;
      const xy = [+r.dataset.x, +r.dataset.y];
      const path = pending.concat([xy]);
      if (candidates(path).length === 0) { pending = []; mark(); return; }
      const ex = exact(path), longer = candidates(path).filter((c) => c.cells.length > path.length && c.column === null);
      if (ex.length === 1 && longer.length === 0) { pending = []; send(ex[0].move); return; }
      pending = path;
      if (ex.length > 1 && longer.length === 0) {  // same cells, several moves (a promotion): choose from the list
        for (const b of $("moves").querySelectorAll("button")) b.classList.toggle("hint", ex.some((c) => c.move === b.dataset.move));
      }
      mark();
    }
    $("boards").addEventListener("click", onClick);

    const ERRORS = {TO: "no reply in time", CE: "could not be reached", IL: "an illegal move"};
    function errorText(s, r, e) {
      if (r === s.human_role) return e.startsWith("TO") ? "no move in time: this move was played for you" : `your move was refused (${e}): one was played for you`;
      return `${ERRORS[e.split(" ")[0]] || e}: a random move was played for ${s.roles[r]}`;
    }
    let adviceFor = null, currentPly = null, playClock = "";
    function clearAdvice() { $("advice").innerHTML = ""; adviceFor = null; }

    function render(s) {
      const turn = s.to_move.map((r) => s.roles[r]).join(", ");
      const live = s.status === "starting" || s.status === "playing";
      if (s.status === "starting" && s.your_turn) $("status").textContent = `Your move (${s.roles[s.human_role]}): it is played as soon as the match starts (${s.starting_phase || "…"}, ${s.waiting_for_start || 0} s).`;
      else if (s.status === "starting") $("status").textContent = `Starting the match: ${s.starting_phase || "…"} (${s.waiting_for_start || 0} s). Your clock starts with the first position.`;
      else if (s.status === "playing") $("status").textContent = s.your_turn ? `Your move (${s.roles[s.human_role]})`
        : s.gdl2 ? "Waiting for the other roles (you have no choice to make now)" : (turn ? `Waiting for ${turn}` : "Waiting…");
      else $("status").textContent = s.status === "over" ? "The match is over" : "The match was aborted";
      $("status").dataset.state = s.your_turn ? "your-turn" : s.status;
      $("thinking").hidden = !s.thinking;
      $("thinking-text").textContent = s.gdl2 ? "the other roles are moving…" : `${s.persona} is thinking…`;
      deadline = live && s.clock_left !== null ? Date.now() + 1000 * s.clock_left : null;
      if (!live) { $("clock").textContent = ""; $("pending").textContent = ""; }
      if (s.boards.length || s.others.length) showPosition(s);
      $("flipped-note").hidden = !s.flipped;
      showDraw(s);
      clicks = s.your_turn ? s.clicks : [];
      if (s.your_turn) $("pending").textContent = "";
      const moves = $("moves"); moves.innerHTML = "";
      for (const c of clicks) {
        const b = el("button", c.label || c.move, "move"); b.type = "button"; b.dataset.move = c.move; b.title = c.move;
        b.addEventListener("click", () => send(c.move)); moves.appendChild(b);
      }
      $("moves-hint").hidden = clicks.length === 0 || s.boards.length === 0;
      pending = []; mark();
      currentPly = s.ply; playClock = s.play_clock;
      if (adviceFor !== null && adviceFor !== s.ply) clearAdvice();   // advice belongs to its position
      const h = $("history"); h.innerHTML = "";
      if (s.gdl2) {
        if (!live && $("gdl2-text")) $("gdl2-text").textContent = "The match is over: everything is shown now, every move (random's too), what each role saw and the true states.";
        $("history-title").textContent = live ? "What you saw, step by step" : "Every move (hidden until the end)";
        $("others-title").textContent = live ? "What you have seen" : "The true final state";
        if (live) showSeen(s, h);
        else showReveal(s);
      }
      s.history.forEach((jm) => {
        const shown = jm.moves.filter((m) => !m.noop || m.error);
        if (!shown.length) return;
        const li = el("li"); li.appendChild(el("span", `${jm.n}. `, "ply"));
        shown.forEach((m, k) => {
          if (k) li.appendChild(document.createTextNode("  ·  "));
          const mv = el("span", `${s.roles[m.role]}: ${m.label}`, "mv"); mv.title = m.move; li.appendChild(mv);
          if (m.error) li.appendChild(el("span", ` (${errorText(s, m.role, m.error)})`, m.role === s.human_role ? "err played-for-you" : "err"));
        });
        h.appendChild(li);
      });
      h.scrollTop = h.scrollHeight;
      if (!live) {
        const res = $("result"); res.hidden = false; res.innerHTML = "";
        res.appendChild(el("h2", s.status === "over" ? "Result" : "Aborted"));
        if (s.goals) {
          const t = el("table"); t.id = "goals";
          s.roles.forEach((r, i) => { const tr = el("tr"); tr.appendChild(el("td", `${r} (${s.players[i]})`)); tr.appendChild(el("td", String(s.goals[i]))); t.appendChild(tr); });
          res.appendChild(t);
          const me = s.goals[s.human_role], best = Math.max(...s.goals);
          res.appendChild(el("p", s.by === "resignation" && s.solo ? "You gave up." : me === best && s.goals.filter((g) => g === best).length === 1 ? "You won." : me === best ? "A draw." : "You lost.", "verdict"));
        }
        if (s.reason) res.appendChild(el("p", s.reason, "reason"));
        const f = el("form"); f.method = "post"; f.action = `/play/${sid}/rematch`; f.className = "again";
        const b = el("button", "Rematch"); b.id = "rematch"; b.type = "submit"; f.appendChild(b);
        const g = el("a", "other settings"); g.href = "/game?key=" + encodeURIComponent(s.game_key); f.appendChild(document.createTextNode(" ")); f.appendChild(g);
        if (s.record) { const a = el("a", "replay this match"); a.href = "/replay?file=" + encodeURIComponent(s.record); a.id = "replay-link"; f.appendChild(document.createTextNode(" · ")); f.appendChild(a); }
        res.appendChild(f);
        $("end-card").hidden = true;
      }
    }

    // a draw offer: the button while one can be made, the persona's answer to the last one
    function showDraw(s) {
      const btn = $("offer-draw"), ans = $("draw-answer");
      if (!btn) return;
      const d = s.draw, live = s.status === "playing";
      btn.disabled = !live || !s.can_draw || (d !== null && d.current && d.status !== "stale");
      if (!d) { ans.hidden = true; return; }
      ans.hidden = false;
      ans.className = "draw-" + d.status;
      ans.dataset.status = d.status;
      ans.textContent = d.current || d.status === "accepted" ? d.message : `${d.message} (offered in an earlier position)`;
    }

    // GDL-II: the person's own steps (their move when they had a choice, and their percepts)
    function showSeen(s, h) {
      let before = [];
      s.seen.forEach((st) => {
        const li = el("li"); li.appendChild(el("span", `${st.n}. `, "ply"));
        if (st.move && (st.chose || st.error)) { const mv = el("span", `you: ${st.label}`, "mv"); mv.title = st.move; li.appendChild(mv); li.appendChild(document.createTextNode("  ·  ")); }
        if (st.error) li.appendChild(el("span", `(${errorText(s, s.human_role, st.error)}) `, "err played-for-you"));
        // what is new since the step before, in full; what it says again, counted
        const fresh = st.percepts.filter((p) => !before.includes(p)), again = st.percepts.length - fresh.length;
        const text = !st.percepts.length ? "you saw nothing"
          : `you saw: ${fresh.join("; ") || "nothing new"}` + (again ? ` (and ${again} as before)` : "");
        const sp = el("span", text, "saw"); sp.title = st.percepts.join("; "); li.appendChild(sp);
        before = st.percepts;
        h.appendChild(li);
      });
    }
    // GDL-II, once the match has ended: every role's percepts and the true states
    function showReveal(s) {
      const box = $("reveal"); box.innerHTML = ""; box.hidden = !s.reveal;
      if (!s.reveal) return;
      box.appendChild(el("h3", "The whole match"));
      box.appendChild(el("p", "Hidden while it was played: what each role saw at each step, and the true states (every move is in the list above).", "note"));
      const seers = s.roles.map((r, i) => i).filter((i) => s.reveal.steps.some((st) => st.percepts[i] && st.percepts[i].length));
      const t = el("table"); t.id = "reveal-table";
      const hd = el("tr"); hd.appendChild(el("th", "step"));
      for (const i of seers) hd.appendChild(el("th", `${s.roles[i]}${i === s.human_role ? " (you)" : ""} saw`));
      t.appendChild(hd);
      const before = s.roles.map(() => []);
      for (const st of s.reveal.steps) {
        const tr = el("tr"); tr.appendChild(el("td", String(st.n)));
        for (const i of seers) {   // new since that role's step before in full, repeats counted
          const ps = st.percepts[i] || [], fresh = ps.filter((p) => !before[i].includes(p)), again = ps.length - fresh.length;
          const td = el("td", !ps.length ? "–" : (fresh.join("; ") || "nothing new") + (again ? ` (and ${again} as before)` : ""));
          td.title = ps.join("; "); tr.appendChild(td); before[i] = ps;
        }
        t.appendChild(tr);
      }
      box.appendChild(t);
      const d = el("details"); d.id = "true-states"; d.appendChild(el("summary", "The true state at each step"));
      const states = [["start", s.reveal.initial]].concat(s.reveal.steps.map((st) => [`after step ${st.n}`, st.state]));
      for (const [name, facts] of states) { const p = el("p"); p.appendChild(el("b", `${name}: `)); p.appendChild(document.createTextNode(facts.join("; "))); d.appendChild(p); }
      box.appendChild(d);
    }

    async function poll() {
      try {
        const r = await fetch(`/api/play/${sid}`);
        if (r.ok) {
          const s = await r.json();
          const key = `${s.status}|${s.ply}|${s.your_turn}|${s.thinking}|${s.boards.length}|${s.history.length}|${(s.seen || []).length}|${s.waiting_for_start}|${s.starting_phase}|${s.draw ? s.draw.status + s.draw.ply : ""}`;
          if (key !== last) { last = key; render(s); }
          if (s.status === "over" || s.status === "aborted") { deadline = null; return; }
        }
      } catch (e) { /* the server is busy or restarting: try again */ }
      setTimeout(poll, 300);
    }
    setInterval(() => { $("clock").textContent = deadline === null ? "" : `clock: ${Math.max(0, (deadline - Date.now()) / 1000).toFixed(1)} s`; }, 200);
    $("resign").addEventListener("click", () => {
      const solo = $("resign").dataset.solo === "1", started = last !== null && !last.startsWith("starting");
      const ask = !started ? "Leave this match? It has not started yet; it ends now."
        : solo ? "Give up? The match ends now and is recorded as given up (you score 0)."
        : "Resign? The match ends now, recorded as your resignation: the persona wins.";
      if (window.confirm(ask)) fetch(`/api/play/${sid}/resign`, {method: "POST"});
    });
    if ($("offer-draw")) $("offer-draw").addEventListener("click", async () => {
      $("offer-draw").disabled = true;
      try {
        const r = await fetch(`/api/play/${sid}/draw`, {method: "POST"});
        const a = await r.json();
        if (!r.ok) { $("draw-answer").hidden = false; $("draw-answer").textContent = a.error || "no draw now"; }
      } catch (e) { $("offer-draw").disabled = false; }
    });
    $("advice-btn").addEventListener("click", async () => {
      clearAdvice();
      $("advice").textContent = `thinking… (up to its play clock, ${playClock} s; the first time in a game also loads its engine)`;
      let a, r;
      try { r = await fetch(`/api/play/${sid}/persona`); a = await r.json(); }
      catch (e) { $("advice").textContent = "the server did not answer; try again"; return; }
      $("advice").innerHTML = "";
      if (!r.ok) { $("advice").appendChild(el("p", a.error || "no advice", "err")); return; }
      if (currentPly !== null && a.ply !== currentPly) { $("advice").appendChild(el("p", "The position changed meanwhile: ask again.", "note")); return; }
      adviceFor = a.ply;
      if (a.over) { $("advice").appendChild(el("p", a.message, "advice-over")); return; }
      if (a.unavailable) { $("advice").appendChild(el("p", a.message, "note advice-unavailable")); return; }
      const head = el("p"); head.id = "advice-summary";
      head.textContent = `It would play `;
      const c = el("b", a.choice_label); c.title = a.choice; head.appendChild(c);
      if (a.also.length) head.appendChild(document.createTextNode(` (or, as likely, ${a.also.join(", ")}: close enough in Q for it)`));
      head.appendChild(document.createTextNode("."));
      $("advice").appendChild(head);
      if (a.uncertain) { const n = el("p", a.uncertain, "note advice-noise"); n.id = "advice-noise"; $("advice").appendChild(n); }
      if (a.random_error > 0) $("advice").appendChild(el("p", `It also plays a random move ${Math.round(100 * a.random_error)} % of the time` + (a.drawn !== a.choice ? ` (this search drew ${a.drawn_label}).` : "."), "note"));
      if (a.hidden) $("advice").appendChild(el("p", `From what you have seen only: ${a.states} possible state${a.states === 1 ? "" : "s"} now (${a.histories} histories consistent with your moves and percepts${a.lenient ? ", none exactly" : ""}); it searched the ${a.searched} most likely and pooled their values.`, "note advice-hidden"));
      $("advice").appendChild(el("p", `${a.role_name}'s moves, ${a.simulations} simulations in ${a.seconds.toFixed(1)} s (its limit ${a.limit}; ${a.engine} engine):`, "note"));
      const t = el("table"); t.id = "advice-table";
      const hd = el("tr"); for (const x of ["move", "Q", "visits"]) hd.appendChild(el("th", x)); t.appendChild(hd);
      for (const m of a.moves) {
        const tr = el("tr"); tr.className = (m.choice ? "choice" : m.likely ? "likely" : "") + (m.tied ? " tied" : "");
        const td = el("td", m.label); td.title = m.move; tr.appendChild(td);
        // the value with its 95 % interval (moves the search cannot tell apart come first, unranked)
        tr.appendChild(el("td", m.visits ? m.q.toFixed(1) + (m.pm ? ` ± ${m.pm.toFixed(0)}` : "") : "–")); tr.appendChild(el("td", String(m.visits))); t.appendChild(tr);
      }
      $("advice").appendChild(t);
      if (a.legal > a.moves.length) $("advice").appendChild(el("p", `(${a.legal - a.moves.length} more moves not shown)`, "note"));
    });
    poll();
  }

  // ------------------------------------------------------------------ replay
  function replay() {
    const steps = JSON.parse($("replay-data").textContent);
    let i = 0;
    function show() {
      showPosition(steps[i]);
      $("step").textContent = String(i);
      const j = $("joint"); j.innerHTML = "";
      if (!steps[i].named) j.textContent = steps[i].moves ? "last move: " + steps[i].moves.join("  ·  ") : "initial state";
      else {
        j.appendChild(document.createTextNode(`move ${i}: `));
        const shown = steps[i].named.filter((m) => !m.noop);
        (shown.length ? shown : steps[i].named).forEach((m, k) => {
          if (k) j.appendChild(document.createTextNode("  ·  "));
          const sp = el("span", `${m.role}: ${m.label}`, "mv"); sp.title = m.move; j.appendChild(sp);
        });
      }
      if (steps[i].percepts) {   // GDL-II: what each role saw of this step
        const roles = steps[i].named ? steps[i].named.map((m) => m.role) : [];
        steps[i].percepts.forEach((ps, r) => {
          if (!ps.length) return;
          j.appendChild(el("div", `${roles[r] || r} saw: ${ps.join("; ")}`, "saw"));
        });
      }
      $("prev").disabled = $("first").disabled = i === 0;
      $("next").disabled = $("last").disabled = i === steps.length - 1;
    }
    const go = (k) => { i = Math.max(0, Math.min(steps.length - 1, k)); show(); };
    $("first").onclick = () => go(0); $("prev").onclick = () => go(i - 1);
    $("next").onclick = () => go(i + 1); $("last").onclick = () => go(steps.length - 1);
    document.addEventListener("keydown", (e) => { if (e.key === "ArrowRight") go(i + 1); if (e.key === "ArrowLeft") go(i - 1); });
    show();
    const v = $("verdict");
    async function verdict() {   // the check on the rules runs beside the page
      try {
        const r = await fetch(`/api/replay/${v.dataset.key}/verdict`);
        const a = await r.json();
        if (a.verdict) { v.textContent = a.verdict; delete v.dataset.pending; return; }
      } catch (e) { /* try again */ }
      setTimeout(verdict, 1000);
    }
    if (v && v.dataset.pending) verdict();
  }
  return {play, replay};
})();
