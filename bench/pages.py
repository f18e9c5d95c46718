"""Benchmark: pages per incident, for every symptom scenario, with and without incident grouping.

One `rocketwatch run` subprocess watches one simulated cluster per scenario (the machinery of
tests/acceptance/test_incident_pages.py, tests/helpers/symptom_run.py: rule holds a quarter of the
built-in ones, 3 s cycles; Slack stand-in, real SMTP server and webhook receiver on loopback,
tests/helpers/pages_received.py) until every scenario's alerts fired, then counts the pages: top-level Slack messages, mail threads, webhook groupKeys. It runs
twice: with the default notify settings (`group_by: [incident]`, issue 36), then with the ones
before it (`group_by: [alertname, cluster, group]` and the old default inhibit rule: a critical
category=broker alert mutes category=consumer alerts on [cluster, broker]).

Besides the registry's scenarios, `broker-crash` is broker-down's broker-b dying while the daemon
watches it (the registry's broker-down is dead from the start, so the daemon never saw it report).

Run with `make bench` or directly (about 17 minutes: the stall rules' windows run at full length);
`--scenarios a,b` for fewer. Writes bench/results/pages.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import RESULTS, run_facts  # noqa: E402
from tests.helpers.pages_received import Page, pages_of  # noqa: E402
from tests.helpers.symptom_run import (  # noqa: E402
    CRASH,
    EXPECTED,
    GROUP_B,
    LEGACY_NOTIFY,
    STUCK,
    STUCK_TIME_SCALE,
    Incident,
    watching,
)

RUNS = {"incident": "", "legacy": LEGACY_NOTIFY}


def measure(tmp: Path, names: list[str], notify: str) -> dict[str, Any]:
    """One daemon watching `names` until their alerts fired: per scenario, its incidents and pages."""
    expected = {name: EXPECTED[name] for name in names}
    started = time.monotonic()
    with watching(tmp, names, notify) as run:
        # Fired, not delivered: under the legacy settings an inhibit rule may mute some of them.
        run.wait_for(expected, at_receivers=False)
        pages = run.settle()
        incidents = run.incidents()
        run.stop()
    return {"minutes": round((time.monotonic() - started) / 60, 1), "returncode": run.returncode,
            "scenarios": {name: _scenario(name, pages, incidents) for name in names}}


def _scenario(name: str, pages: dict[str, Page], incidents: dict[str, Incident]) -> dict[str, Any]:
    mine = sorted(pages_of(pages, name), key=lambda p: -len(p.alerts))
    theirs = [i for i in incidents.values() if i.cluster == name]
    fired = {fp: m for i in theirs for fp, m in i.members.items()}
    delivered = {fp for p in mine for fp in p.alerts}
    return {
        "incidents": len(theirs),
        "slack": sum(p.slack_tops for p in mine),
        "mail": sum(p.mail_threads for p in mine),
        "webhook": sum(1 for p in mine if p.hook_posts),
        "updates": sum(p.hook_posts for p in mine),
        "alerts_per_page": [len(p.alerts) for p in mine],
        "rules_per_page": [_rules(p) for p in mine],
        "fired": len(fired),
        "muted": sorted(Counter(m["rule"] for fp, m in fired.items() if fp not in delivered).items()),
        "group_b": sum(1 for p in mine for _, labels in p.alerts.values() if labels.get("group") == GROUP_B),
        "split": [i.show() for i in theirs] if len(mine) > 1 or len(theirs) > 1 else [],
    }


def _rules(page: Page) -> str:
    counts = Counter(rule for rule, _ in page.alerts.values())
    return ", ".join(f"{rule} {n}" if n > 1 else rule for rule, n in sorted(counts.items()))


def _pages(s: dict[str, Any]) -> str:
    same = s["slack"] == s["mail"] == s["webhook"]
    return f"**{s['webhook']}**" if same else f"{s['slack']} / {s['mail']} / {s['webhook']}"


def markdown(result: dict[str, Any]) -> str:
    """The results as Markdown: one row per scenario, then what each page held."""
    now, before = result["runs"]["incident"], result["runs"]["legacy"]
    names = list(now["scenarios"])
    rows = []
    for name in names:
        a, b = now["scenarios"][name], before["scenarios"][name]
        muted = ", ".join(f"{rule} {n}" for rule, n in b["muted"]) or "-"
        label = f"{name}*" if name == CRASH else name
        rows.append(f"| {label} | {a['incidents']} | {_pages(a)} | {', '.join(map(str, a['alerts_per_page']))} | "
                    f"{a['updates']} | {_pages(b)} | {', '.join(map(str, b['alerts_per_page']))} | {b['updates']} "
                    f"| {muted} |")
    total = {run: sum(r["scenarios"][n]["webhook"] for n in names) for run, r in result["runs"].items()}
    held = "\n".join(
        f"- **{name}**: now {' | '.join(now['scenarios'][name]['rules_per_page'])}; before: "
        + " | ".join(before["scenarios"][name]["rules_per_page"]) for name in names)
    splits = "\n\n".join(f"**{name}** ({run} grouping):\n\n```\n" + "\n".join(r["scenarios"][name]["split"]) + "\n```"
                         for run, r in result["runs"].items() if run == "incident"
                         for name in names if r["scenarios"][name]["split"])
    group_b = sum(r["scenarios"][n]["group_b"] for r in result["runs"].values() for n in names)
    notes = []
    if CRASH in names:
        registry = [n for n in names if n != CRASH]
        notes.append(f"\\* {CRASH} is not a registry scenario: broker-down's broker-b serves until the daemon's "
                     "first cycle, then refuses connections (the registry's broker-down is dead from the start, so "
                     "the daemon never sees it report and BrokerStoppedReporting cannot fire). Without it: "
                     f"{sum(now['scenarios'][n]['webhook'] for n in registry)} pages now, "
                     f"{sum(before['scenarios'][n]['webhook'] for n in registry)} before.")
    if not any(before["scenarios"][n]["muted"] for n in names):
        notes.append("The old inhibit rule muted nothing here: no scenario fires a critical category=broker alert "
                     "beside consumer-side alerts on the same broker (CollectorTargetUnreachable is "
                     "category=collector; BrokerStoppedReporting turns critical after 5 m).")
    return (
        f"# Pages per incident ({result['when']})\n\n{result['machine']}, load {result['load_average_1m']}.\n\n"
        f"{result['setup']}\n\n"
        "Pages: top-level Slack messages / mail threads / webhook groupKeys (one bold figure when the three "
        "agree). Updates: notifications the webhook received (the first one and every change after it; Slack "
        "got each as chat.update plus a thread reply, email as a reply in the thread). \"Now\" is the default "
        "`group_by: [incident]`; \"before\" is `group_by: [alertname, cluster, group]` with the old default "
        "inhibit rule (a critical category=broker alert mutes category=consumer alerts on [cluster, broker]); "
        "muted: alerts that fired and reached no receiver.\n\n"
        "| scenario | daemon's incidents | pages now | alerts per page now | updates now | pages before | "
        "alerts per page before | updates before | muted before |\n|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n| **total** | {sum(now['scenarios'][n]['incidents'] for n in names)} | **{total['incident']}** | | "
        f"{sum(now['scenarios'][n]['updates'] for n in names)} | **{total['legacy']}** | | "
        f"{sum(before['scenarios'][n]['updates'] for n in names)} | |\n\n"
        + "".join(f"{note}\n\n" for note in notes)
        + f"Alerts of the healthy group {GROUP_B} paged: {group_b}. Daemon runs: {now['minutes']} and "
        f"{before['minutes']} min.\n\n## What each page held\n\n{held}\n"
        + (f"\n## Incidents that came as more than one page\n\nEach scenario plays one cause. The daemon's "
           f"incidents for those that paged more than once, where each opened and what explains each alert:\n\n"
           f"{splits}\n" if splits else "")
    )


def main() -> None:
    """Run the daemon with each notify setting and write bench/results/pages.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(EXPECTED), help=f"comma-separated, of: {', '.join(EXPECTED)}")
    names = [n.strip() for n in parser.parse_args().scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPECTED]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    runs = {}
    for run, notify in RUNS.items():
        with tempfile.TemporaryDirectory(prefix=f"rw-bench-pages-{run}-") as tmp:
            runs[run] = measure(Path(tmp), names, notify)
    result = {
        **run_facts(),
        "setup": (f"One `rocketwatch run` watching one simulated cluster per scenario: collect and evaluate every "
                  f"3 s, threshold rules' `for:` a quarter of the built-in ones, stall/growth/churn/absent windows "
                  f"at full length; {STUCK} at time scale {STUCK_TIME_SCALE}, blocked after the daemon's first "
                  f"cycle; {CRASH}: broker-b refused from the daemon's first cycle on. Counted once every "
                  f"scenario's alerts had fired (tests/helpers/symptom_run.py EXPECTED) and two more "
                  f"evaluations ran."),
        "runs": runs,
    }
    text = markdown(result)
    (RESULTS / "pages.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
