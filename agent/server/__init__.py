"""The GGP player server: HTTP front (``app``), matches and deadlines (``matches``), worker
processes (``procs``, ``worker``), message parsing (``protocol``).  See ARCHITECTURE.md."""
from .config import ServerConfig  # noqa: F401
