"""Fitting personas to recorded players, and telling players apart (spec 4.5, 5.1, 7).

    dataset.py      records -> decisions (replayed on the engine, cached per file)
    splits.py       player-match splits: later matches, grouped k-fold
    likelihood.py   the behaviour likelihood, its choice-parameter grid, thesis fitness F
    scoring.py      the one scoring task: Q-values of a persona on decisions (CRN seeds), cached
    ga.py           the genetic algorithm of spec 4.5 (and thesis mode), resumable
    baselines.py    random and move-frequency (n-gram) models
    metrics.py      per-decision metrics and bootstrap intervals over player-matches
    experiment.py   fit every selected player + pooled + champion, evaluate, attribute, report
    attribution.py  rank fitted personas by likelihood of an unknown player's decisions
"""
