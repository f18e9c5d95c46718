"""`python -m daemon.cli`: the rocketwatch command."""

import sys

from daemon.cli.command import main

sys.exit(main())
