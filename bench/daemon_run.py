"""A `rocketwatch run` daemon for the end-to-end benchmarks: its config at production cadence, its metrics."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.daemon_proc import http  # noqa: E402


def production_config(tmp: Path, namesrv: str, http_port: int, receivers: str = "") -> Path:
    """A config in `tmp` for the simulated cluster, collecting and evaluating every 30 s as shipped.

    `receivers` is YAML for notify.receivers' list items (each line starting with `    - `), or "".
    """
    notify = f"notify:\n  receivers:\n{receivers}" if receivers else ""
    path = tmp / "rocketwatch.yaml"
    path.write_text(f"""clusters:
  - name: DefaultCluster
    namesrv: ["{namesrv}"]
state_dir: {tmp / "state"}
collect: {{interval: 30s, timeout: 10s}}
evaluate: {{interval: 30s}}
http: {{listen: "127.0.0.1:{http_port}"}}
{notify}""")
    return path


def metric(base: str, name: str) -> float | None:
    """The value of an unlabelled metric line from the daemon's /metrics, or None."""
    try:
        status, body = http("GET", f"{base}/metrics")
    except OSError:  # not listening yet: the daemon is still starting
        return None
    found = re.search(rf"^{re.escape(name)} ([0-9.eE+-]+)$", body, re.MULTILINE) if status == 200 else None
    return float(found.group(1)) if found else None
