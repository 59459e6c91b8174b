% rock_paper_scissors in Prolog syntax: the corpus sheet (corpus/gdl2/rock_paper_scissors.kif)
% rule for rule, as pyggp writes its games. From pyggp 994afd5 src/games/rock_paper_scissors.gdl
% (github.com/Entze/pyggp, MIT licence, Copyright (c) 2023 Lukas Grassauer), converted by pl2kif.py.
role(left).
role(right).
init(control(left)).
init(control(right)).
choice(rock).
choice(paper).
choice(scissors).
beats(rock, scissors).
beats(paper, rock).
beats(scissors, paper).
next(chose(R, C)) :- role(R), choice(C), does(R, C).
next(chose(R, C)) :- role(R), choice(C), true(chose(R, C)).
legal(R, C) :- role(R), choice(C), true(control(R)).
goal(R1, 0) :- role(R1), role(R2), choice(C1), choice(C2), distinct(R1, R2), distinct(C1, C2),
    true(chose(R1, C1)), true(chose(R2, C2)), not beats(C1, C2).
goal(R1, 50) :- role(R1), role(R2), choice(C), distinct(R1, R2), true(chose(R1, C)),
    true(chose(R2, C)).
goal(R1, 100) :- role(R1), role(R2), choice(C1), choice(C2), distinct(R1, R2), distinct(C1, C2),
    true(chose(R1, C1)), true(chose(R2, C2)), beats(C1, C2).
terminal :- role(R1), role(R2), distinct(R1, R2), true(chose(R1, _C1)), true(chose(R2, _C2)).
sees(R, F) :- role(R), next_true(F).
next_true(chose(R, C)) :- role(R), choice(C), does(R, C).
next_true(chose(R, C)) :- role(R), choice(C), true(chose(R, C)).
legal(R, noop) :- role(R), not(true(control(R))).
