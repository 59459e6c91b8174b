"""Games with hidden information (GDL-II): what a role knows (``belief``), priors over what
it cannot see (``prior``), search on a belief (``search``), the player of a match (``player``)."""
