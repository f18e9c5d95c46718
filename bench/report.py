"""What every benchmark writes beside its figures: when, on what machine, under what load; and where."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def run_facts() -> dict[str, Any]:
    """The time, the machine and its 1-minute load average, to read a result's figures against."""
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def write_results(name: str, result: dict[str, Any], markdown: str) -> None:
    """Write bench/results/NAME.json and NAME.md, and print the Markdown."""
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)
