"""Fitting personas to recorded players, and telling players apart (spec 4.5, 4.6, 5.1, 7).

Shared by both fitters:
    dataset.py      records -> decisions (replayed on the engine, cached per file)
    splits.py       player-match splits: later matches, grouped k-fold
    prepare.py      a fit's decisions (one game, split, capped test), subsamples, CRN seeds, FitError
    likelihood.py   the behaviour likelihood, its choice-parameter grid, thesis fitness F
    baselines.py    random and move-frequency (n-gram) models
    metrics.py      per-decision metrics and bootstrap intervals over player-matches
    heldout.py      held-out evaluation: metrics against the baselines, paired differences, matrix, bar
    heldout_report.py  the report sections of that evaluation, in both fit reports
    attribution.py  rank fitted personas by likelihood of an unknown player's decisions
    modelfile.py    a fitted model as a persona file (the fit and the model that plays)
The fast fit (4.6, the default):
    shared_evaluations.py  per-decision evaluations (searches, look-ahead, fact changes), cached per game
    movefeatures.py, choicemodel.py  move features and the per-player conditional logit
    fast.py, fastreport.py  the run with its stages timed, and its page
    scripted.py     scripted players with one habit (the clone benchmark)
The GA (4.5, ``fit --ga``):
    scoring.py      the one scoring task: Q-values of a persona on decisions (CRN seeds), cached
    ga.py           the genetic algorithm of spec 4.5 (and thesis mode), resumable
    fitting.py      one persona's GA fit and the champion baseline
    experiment.py, fitreport.py  fit every selected player + pooled + champion, evaluate, report
commands.py: the command-line subcommands of both.
"""
