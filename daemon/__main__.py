"""`python -m daemon`: the rocketwatch command."""

import sys

from daemon.cli.command import main

sys.exit(main())
