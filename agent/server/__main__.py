"""``python -m agent.server [options]``: the same as ``ggp-persona serve``."""
import sys

from .cli import main

sys.exit(main())
