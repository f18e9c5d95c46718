"""Where the real-broker captures live: ../shared/fixtures beside the checkout (as CI lays it out)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("ROCKETWATCH_FIXTURES", REPO.parent / "shared" / "fixtures"))
CAPTURE = FIXTURES / "rocketmq-4.9.7"
WIRE = CAPTURE / "wire"
CAPTURE_5 = FIXTURES / "rocketmq-5.3.3"
WIRE_5 = CAPTURE_5 / "wire"
