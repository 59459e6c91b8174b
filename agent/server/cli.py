"""``ggp-persona serve``: arguments, settings, and running uvicorn."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import DEFAULT_NAME, DEFAULT_PORT, ConfigError, ServerConfig, check_persona, load_persona_rules

HELP = "run the GGP player server (register http://HOST:PORT/ with a game manager)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for a game manager on another machine)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--persona", metavar="NAME|FILE", default=None,
                   help="the persona that plays, unless --personas-config picks another for a match")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"player name given in INFO replies (default {DEFAULT_NAME})")
    p.add_argument("--personas-config", metavar="FILE", default=None,
                   help="TOML file mapping match-id prefixes or regexes to personas (see README.md, Choosing the persona)")
    p.add_argument("--log-dir", default="match_logs", help="folder for match records (default match_logs)")
    p.add_argument("--margin", type=float, default=0.75, metavar="SECONDS",
                   help="reply at least this long before a clock runs out (default 0.75)")
    p.add_argument("--margin-fraction", type=float, default=0.10, metavar="F",
                   help="... or this fraction of the clock, if larger (default 0.10)")
    p.add_argument("--max-matches", type=int, default=8, help="matches played at once (default 8)")
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible fallbacks and searches)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def config_from_args(args) -> ServerConfig:
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a TCP port")
    if args.margin < 0 or not 0 <= args.margin_fraction < 1:
        raise ConfigError("--margin must be >= 0 and --margin-fraction in [0, 1)")
    if args.max_matches < 1:
        raise ConfigError("--max-matches must be at least 1")
    if args.name.strip() == "" or any(c in args.name for c in "() \t\r\n"):
        raise ConfigError("--name must be one word without parentheses (it goes into ( name ... ))")
    cfg = ServerConfig(host=args.host, port=args.port, name=args.name, persona=args.persona,
                       log_dir=Path(args.log_dir), margin_min=args.margin,
                       margin_fraction=args.margin_fraction, max_matches=args.max_matches, seed=args.seed)
    if args.personas_config:
        rules, default = load_persona_rules(args.personas_config)
        cfg.persona_rules = rules
        if default is not None and args.persona is None:
            cfg.persona = default
    for spec in {cfg.persona, *(r.persona for r in cfg.persona_rules)}:
        if spec is not None:
            check_persona(spec)
    return cfg


def run(cfg: ServerConfig, log_level: str = "info") -> int:
    import uvicorn

    from .app import create_app

    logging.basicConfig(level=getattr(logging, log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        cfg.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the match log folder {cfg.log_dir}: {e.strerror or e}") from None
    app = create_app(cfg)
    server = uvicorn.Server(uvicorn.Config(
        app, host=cfg.host, port=cfg.port, http="h11", lifespan="on", access_log=False,
        server_header=False, date_header=False, log_level=log_level,
        h11_max_incomplete_event_size=64 * 1024))
    server.run()
    return 0


def cmd_serve(args) -> int:
    return run(config_from_args(args), args.log_level)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ggp-persona serve", description=HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return cmd_serve(args)
    except ConfigError as e:
        print(f"ggp-persona serve: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
