"""A local game manager: plays any players (our personas, any GGP player over HTTP, a person)
against each other with ggp-base's GameServer semantics, and records every match in ggp-base's
Match JSON.  ``runner.run_match`` plays one match; ``players.make_player`` builds a player from
a spec; ``cli`` is ``ggp-persona match`` (rounds, roles rotated, results table)."""
