"""Playtesting: personas as synthetic playtesters of a GDL game and its variants (spec 6.6).

    variants.py  variants (rule files, initial-state edits) and their validation
    play.py      one seeded run (persona vs fixed opponent) and the agreement task
    runner.py    runs and agreement on the compute backend, cached per run (resumable)
    metrics.py   rates, intervals, Welch tests, agreement matrix, Pearson, fact shares
    heatmap.py   fact shares on the board (gdl.board) or as bars
    report.py    the HTML page with its PNGs and data
    command.py   ``ggp-persona playtest``
"""
