"""Games with hidden information (GDL-II): what a role knows (``belief``), priors over what
it cannot see (``prior``), search on a belief (``search``), the player of a match (``player``),
and the server referee's one history, which knows our legal moves for every step on a
bounded budget whatever the player does (``tracker``)."""
