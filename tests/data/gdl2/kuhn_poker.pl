% Kuhn poker in GDL-II, Prolog syntax: the game of corpus/gdl2/kuhn_poker.kif (written for the
% project), stated with Prolog's connectives: ';' for or, '\+' and not for negation, '\=' for
% distinct, '_' for variables used once.
% Three cards j < q < k; each player antes 1 and random deals one card to each. first: check
% or bet. After a check, second: check (showdown) or bet; then first: call or fold. After a
% bet by first, second: call or fold. Goals 0/25/75/100. Each sees only his own card, and
% both cards at a showdown.

role(first). role(second). role(random).
card(j). card(q). card(k).
beats(k, q). beats(k, j). beats(q, j).
opp(first, second). opp(second, first).

init(control(random)).

legal(random, deal(A, B)) :- true(control(random)), card(A), card(B), A \= B.
legal(R, noop) :- role(R), not true(control(R)).
legal(first, check) :- true(control(first)), \+ true(acted(first, check)).
legal(first, bet) :- true(control(first)), \+ true(acted(first, check)).
legal(first, call) :- true(control(first)), true(acted(first, check)).
legal(first, fold) :- true(control(first)), true(acted(first, check)).
legal(second, check) :- true(control(second)), true(acted(first, check)).
legal(second, bet) :- true(control(second)), true(acted(first, check)).
legal(second, call) :- true(control(second)), true(acted(first, bet)).
legal(second, fold) :- true(control(second)), true(acted(first, bet)).

next(hand(first, A)) :- does(random, deal(A, _)).
next(hand(second, B)) :- does(random, deal(_, B)).
next(hand(R, C)) :- true(hand(R, C)).
next(control(first)) :- does(random, deal(_, _)).
next(control(second)) :- true(control(first)), not(true(acted(first, check))).
next(control(first)) :- does(second, bet), true(acted(first, check)).
next(acted(R, M)) :- does(R, M), distinct(R, random), M \== noop.
next(acted(R, M)) :- true(acted(R, M)).

folded :- true(acted(_, fold)).
called :- true(acted(_, call)).
terminal :- folded ; called.
terminal :- true(acted(first, check)), true(acted(second, check)).
showdown :- terminal, \+ folded.
winner(R) :- true(hand(R, A)), opp(R, O), true(hand(O, B)), beats(A, B).

goal(R, 25) :- true(acted(R, fold)).
goal(R, 75) :- opp(R, O), true(acted(O, fold)).
goal(R, 100) :- showdown, called, winner(R).
goal(R, 0) :- showdown, called, opp(R, O), winner(O).
goal(R, 75) :- showdown, not called, winner(R).
goal(R, 25) :- showdown, not called, opp(R, O), winner(O).
goal(random, 0).

% Percepts (GDL-II: the state before the move and the moves made).
sees(first, hand(first, A)) :- does(random, deal(A, _)).
sees(second, hand(second, B)) :- does(random, deal(_, B)).
sees(R, did(P, M)) :- role(R), does(P, M), P \= random, distinct(M, noop).
shown :- does(_, call).
shown :- does(second, check), true(acted(first, check)).
sees(R, hand(P, C)) :- role(R), true(hand(P, C)), shown.
