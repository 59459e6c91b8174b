"""``ggp-persona serve``: arguments, settings, and running uvicorn."""
from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path

from ..compute import default_workers
from .config import (DEFAULT_MARGIN, DEFAULT_MARGIN_FRACTION, DEFAULT_NAME, DEFAULT_PORT, MAX_CONNECTIONS,
                     READ_TIMEOUT, ConfigError, ServerConfig, check_persona, default_memory_budget_mb,
                     load_persona_rules)

# Imports inside functions: `ggp-persona` builds every subcommand's parser when it starts
# (agent/cli.py imports this module for add_arguments), so the FastAPI app, uvicorn and the
# match machinery are imported only when `serve` runs.

HELP = "run the GGP player server (register http://HOST:PORT/ with a game manager)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for a game manager on another machine)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--persona", metavar="NAME|FILE", default=None,
                   help="the persona that plays, unless --personas-config picks another for a match")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"player name given in INFO replies (default {DEFAULT_NAME})")
    p.add_argument("--personas-config", metavar="FILE", default=None,
                   help="TOML file mapping match-id prefixes or regexes to personas (see docs/guide/server.md, Choosing the persona)")
    p.add_argument("--log-dir", default="match_logs", help="folder for match records (default match_logs)")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN, metavar="SECONDS",
                   help=f"reply at least this long before a clock runs out, for the network and a loaded "
                        f"machine (default {DEFAULT_MARGIN}; docs/benchmarks/server.md has the measurements)")
    p.add_argument("--margin-fraction", type=float, default=DEFAULT_MARGIN_FRACTION, metavar="F",
                   help=f"... or this fraction of the clock, if larger (default {DEFAULT_MARGIN_FRACTION})")
    p.add_argument("--read-timeout", type=float, default=READ_TIMEOUT, metavar="SECONDS",
                   help=f"close a connection whose request is not complete after this long (default {READ_TIMEOUT:g})")
    p.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS,
                   help=f"open connections at most; slow ones make room (default {MAX_CONNECTIONS})")
    p.add_argument("--worker-memory-mb", type=int, default=2048, metavar="MB",
                   help="memory cap of each worker process; a referee or player over it ends its match (default 2048)")
    p.add_argument("--prolog-stack-mb", type=int, default=None, metavar="MB",
                   help="SWI-Prolog's stack limit in each worker (default half of --worker-memory-mb), so a "
                        "runaway query usually fails inside Prolog before the cap is reached")
    p.add_argument("--memory-budget-mb", type=int, default=None, metavar="MB",
                   help="memory of all matches together; over it the largest match is ended "
                        f"(default three quarters of this machine's memory: {default_memory_budget_mb()})")
    p.add_argument("--max-matches", type=int, default=8, help="matches played at once (default 8)")
    p.add_argument("--evict-idle", type=float, default=300.0, metavar="SECONDS",
                   help="when every slot is taken, a START ends the match silent longest, if it has had no "
                        "message for this long or is overdue by its own clock (default 300)")
    p.add_argument("--max-idle", type=float, default=3600.0, metavar="SECONDS",
                   help="a match with no message for this long is abandoned, whatever its clocks (default 3600)")
    p.add_argument("--no-ponder", dest="ponder", action="store_false",
                   help="idle between PLAYs (by default a persona that searches until the clock goes on "
                        "searching while the opponents think; it uses the player's core meanwhile)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="search threads per player: each searches a tree of its own and the move is "
                        f"chosen from all of them (default: the cores the server may run on, {default_workers()})")
    p.add_argument("--gdl2-records", metavar="DIR", default=None,
                   help="recorded GDL-II matches (whole records, as `ggp-persona match` writes them): a GDL-II "
                        "match with the same rules predicts the hidden moves and the opponents from them "
                        "(default: every hidden move equally likely)")
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible fallbacks and searches)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def config_from_args(args) -> ServerConfig:
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a TCP port")
    if args.margin < 0 or not 0 <= args.margin_fraction < 1:
        raise ConfigError("--margin must be >= 0 and --margin-fraction in [0, 1)")
    if args.max_matches < 1:
        raise ConfigError("--max-matches must be at least 1")
    if args.threads is not None and not 1 <= args.threads <= 64:
        raise ConfigError("--threads must be between 1 and 64")
    if not args.evict_idle > 0 or not args.max_idle > 0:
        raise ConfigError("--evict-idle and --max-idle must be > 0 seconds")
    if not args.read_timeout > 0 or args.max_connections < 2:
        raise ConfigError("--read-timeout must be > 0 and --max-connections at least 2")
    if args.worker_memory_mb < 64 or (args.memory_budget_mb is not None and args.memory_budget_mb < 64):
        raise ConfigError("--worker-memory-mb and --memory-budget-mb must be at least 64")
    if args.name.strip() == "" or any(c in args.name for c in "() \t\r\n"):
        raise ConfigError("--name must be one word without parentheses (it goes into ( name ... ))")
    cfg = ServerConfig(host=args.host, port=args.port, name=args.name, persona=args.persona,
                       log_dir=Path(args.log_dir), margin_min=args.margin,
                       margin_fraction=args.margin_fraction, max_matches=args.max_matches, seed=args.seed,
                       read_timeout=args.read_timeout, max_connections=args.max_connections,
                       worker_memory_mb=args.worker_memory_mb, prolog_stack_mb=args.prolog_stack_mb,
                       evict_idle=args.evict_idle, max_idle=args.max_idle, ponder=args.ponder)
    if args.memory_budget_mb is not None:
        cfg.memory_budget_mb = args.memory_budget_mb
    if args.gdl2_records is not None:
        if not Path(args.gdl2_records).is_dir():
            raise ConfigError(f"--gdl2-records {args.gdl2_records}: not a folder")
        cfg.gdl2_records = Path(args.gdl2_records)
    if args.threads is not None:
        cfg.threads = args.threads
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
    from .connections import guarded_protocol

    setup_logging(log_level)
    try:
        cfg.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the match log folder {cfg.log_dir}: {e.strerror or e}") from None
    # Bind before anything else: a port in use is a clear error and a non-zero exit, and the
    # server listens (answering INFO with busy) while the worker processes warm up.
    sock = listen_socket(cfg.host, cfg.port)
    app = create_app(cfg)
    server = uvicorn.Server(uvicorn.Config(
        app, host=cfg.host, port=cfg.port, lifespan="on", access_log=False,
        http=guarded_protocol(cfg.read_timeout, cfg.max_connections),
        server_header=False, date_header=False, log_level=log_level,
        h11_max_incomplete_event_size=64 * 1024))
    server.run(sockets=[sock])
    return 0 if server.started else 1


def listen_socket(host: str, port: int) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as e:
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def setup_logging(log_level: str) -> None:
    """The server's log format on stderr (once; later calls change nothing)."""
    logging.basicConfig(level=getattr(logging, log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from .logsafe import install
    install()  # match ids and moves come from the network: no control characters, no megabytes


def cmd_serve(args) -> int:
    # logging first: checking the personas reads their files, which a large fitted persona
    # makes take seconds (the loader says so in the log)
    setup_logging(args.log_level)
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
