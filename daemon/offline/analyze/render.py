"""The analysis as text for a terminal, JSON for scripts, and a self-contained HTML page."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import datetime
from html import escape
from typing import Any

from daemon.common.charts.sparkline import svg_sparkline
from daemon.offline.analyze.report import Report
from daemon.offline.analyze.subject import what_was_analysed


def _t(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def display_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as shown: one line per rebalance (a client's new queues of a topic), not one per queue;
    stats.log's per-minute figures are shown as figures (stats_lines), not as events."""
    shown: list[dict[str, Any]] = []
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for ev in events:
        if ev["event"].startswith("stats_"):
            continue
        if ev["event"] != "rebalance_assigned":
            shown.append(ev)
            continue
        key = (ev["ts"], ev["group"], ev["topic"], ev["client_id"])
        if key not in merged:
            merged[key] = {**ev, "queue_id": None, "queues": []}
            shown.append(merged[key])
        if ev["queue_id"] is not None:
            merged[key]["queues"].append(f"{ev['broker']}/{ev['queue_id']}")
    for row in merged.values():
        row["broker"] = f"{len(row['queues'])} queue(s): {', '.join(row['queues'])}" if row["queues"] else "no queue"
    return shown


_STATS = {"stats_topic_put": "stored", "stats_group_get": "pulled by", "stats_send_back": "sent back for retry by"}


def stats_lines(events: list[dict[str, Any]]) -> list[str]:
    """stats.log's figures per topic and group: peak and last per-minute TPS, zero series left out."""
    series: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for ev in events:
        if ev["event"] in _STATS and ev["value"] is not None:
            series[(ev["topic"] or "", ev["event"], ev["group"] or "")].append(ev["value"])
    return [f"{topic:<28} {_STATS[event]}{' ' + group if group else ''}: up to {max(values):.2f}/s, "
            f"last minute {values[-1]:.2f}/s"
            for (topic, event, group), values in sorted(series.items()) if max(values) > 0]


def by_folder(entries: list[tuple[str, str]]) -> list[str]:
    """Unread or unused files as lines: one per folder and reason with a count (a capture directory
    holds hundreds of files of one kind), a file alone in its group under its own path."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, why in entries:
        groups[(os.path.dirname(path), why)].append(path)
    lines = []
    for (folder, why), paths in groups.items():
        if len(paths) == 1:
            lines.append(f"{paths[0]}: {why}")
            continue
        names = [os.path.basename(p) for p in paths]
        shown = ", ".join(names) if len(names) <= 3 else f"{names[0]}, {names[1]} and {len(names) - 2} more"
        lines.append(f"{os.path.join(folder or '.', '')}: {len(names)} files, {why} ({shown})")
    return lines


def text(report: Report) -> str:
    """Plain text, most important first: what was found, then what fired, then the details."""
    out = [f"rocketwatch analyze — {what_was_analysed(report)}"]
    if report.span:
        out.append(f"covering {_t(report.span[0])} to {_t(report.span[1])}")
    out.append(f"read {len(report.files)} input(s): " + ", ".join(f"{what} {p}" for p, what, _ in report.files))
    out += ["", "WHAT WAS FOUND"]
    out += [f"  {f.subject}: {f.what}" + "".join(f"\n      - {e}" for e in f.evidence) for f in report.findings] or [
        "  nothing wrong in these inputs"]
    out += ["", "WHAT THE RULES SAY (built-in pack replayed over the span)"]
    fired = [t for t in report.timeline if t.state in ("firing", "resolved", "severity")]
    for t in fired:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(t.labels.items()) if k not in ("category",))
        out.append(f"  {_t(t.at)}  {t.state.upper():<9}{(t.severity or ''):<9}{t.rule} {{{labels}}}")
        if t.state == "firing":
            out += [f"      {t.summary}", f"      why: {t.diagnosis}", f"      next: {t.next_steps}"]
    if not fired:
        out.append("  no rule fired on these samples")
    out += ["", "EVENTS (flow control, rebalances, membership, dead letters)"]
    for e in display_events(report.events):
        where = "/".join(str(x) for x in (e["topic"], e["broker"], e["queue_id"]) if x is not None)
        out.append(f"  {_t(e['ts'])}  {e['event']:<24} {e['group'] or '':<16} {where:<28} {e['client_id'] or ''}"
                   + (f" value={e['value']:g}" if e["value"] is not None else ""))
    if stats := stats_lines(report.events):
        out += ["", "BROKER STATS (stats.log, messages per second as RocketMQ prints them)"]
        out += [f"  {line}" for line in stats]
    if report.stuck:
        out += ["", "STUCK THREADS"]
        out += [f"  {s.jvm}: {s.thread.thread} ({s.blocking}) at {s.thread.top_frame}, from {s.thread.app_frame}"
                for s in report.stuck]
    if report.problems or report.skipped:
        out += ["", "NOT READ"]
        out += [f"  {p}" for p in report.problems] + [f"  {line}" for line in by_folder(report.skipped)]
    if report.unused:
        out += ["", "NOT USED"] + [f"  {line}" for line in by_folder(report.unused)]
    return "\n".join(out) + "\n"


def as_json(report: Report) -> str:
    """One JSON document with every section."""
    def row(r: dict[str, Any]) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items()}

    return json.dumps({
        "analysed": what_was_analysed(report),
        "cluster": report.cluster if report.cluster_told else None,
        "brokers": report.brokers,
        "span": [report.span[0].isoformat(), report.span[1].isoformat()] if report.span else None,
        "inputs": [{"path": p, "kind": what, "items": n} for p, what, n in report.files],
        "findings": [{"subject": f.subject, "what": f.what, "evidence": f.evidence} for f in report.findings],
        "timeline": [t.as_json() | {"diagnosis": t.diagnosis, "next_steps": t.next_steps} for t in report.timeline],
        "events": [row(e) for e in report.events],
        "stuck_threads": [{"jvm": s.jvm, "group": s.group, "thread": s.thread.thread, "state": s.thread.state,
                           "blocking": s.blocking, "top_frame": s.thread.top_frame, "app_frame": s.thread.app_frame,
                           "dumps": s.thread.dumps} for s in report.stuck],
        "idle_consume_threads": report.idle_consume_threads,
        "offsets": [row(o) for o in report.offsets],
        "problems": [str(p) for p in report.problems],
        "skipped": [{"path": p, "why": w} for p, w in report.skipped],
        "not_used": [{"path": p, "why": w} for p, w in report.unused],
    }, indent=2)


_STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#212121;max-width:80em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.4em 0}td,th{border:1px solid #ddd;padding:.25em .5em;
text-align:left;font-size:.9em;vertical-align:top}th{background:#eee}.finding{margin:.5em 0;padding:.4em .6em;
border-left:4px solid #c62828;background:#fff}.muted{color:#757575}.chart{display:inline-block;margin:.3em 1em .3em 0}
.firing{color:#c62828;font-weight:600}.resolved{color:#2e7d32}"""


def html(report: Report) -> str:
    """A page that works offline: inline CSS and SVG, no script, no external resource."""
    e = escape
    subject = e(what_was_analysed(report))
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>rocketwatch analyze — {subject}"
             f"</title><style>{_STYLE}</style></head><body><h1>rocketwatch analyze</h1><p>{subject}</p>"]
    if report.span:
        parts.append(f"<p>Covering {e(_t(report.span[0]))} to {e(_t(report.span[1]))}; "
                     f"{len(report.files)} input(s).</p>")
    parts.append("<h2 id=findings>What was found</h2>")
    for f in report.findings:
        parts.append(f"<div class=finding><b>{e(f.subject)}</b>: {e(f.what)}<ul>"
                     + "".join(f"<li>{e(x)}</li>" for x in f.evidence) + "</ul></div>")
    if not report.findings:
        parts.append("<p>Nothing wrong in these inputs.</p>")
    parts.append(_charts(report))
    parts.append("<h2 id=rules>What the rules say</h2><table><tr><th>time</th><th>state</th><th>severity</th>"
                 "<th>rule</th><th>labels</th><th>summary and diagnosis</th></tr>")
    for t in report.timeline:
        if t.state not in ("firing", "resolved", "severity"):
            continue
        labels = ", ".join(f"{k}={v}" for k, v in sorted(t.labels.items()))
        parts.append(f"<tr><td>{e(_t(t.at))}</td><td class={e(t.state)}>{e(t.state)}</td><td>{e(t.severity or '')}"
                     f"</td><td>{e(t.rule)}</td><td>{e(labels)}</td><td>{e(t.summary)}<details><summary>diagnosis "
                     f"and next steps</summary><p>{e(t.diagnosis)}</p><p>{e(t.next_steps)}</p></details></td></tr>")
    parts.append("</table>")
    if not any(t.state in ("firing", "resolved", "severity") for t in report.timeline):
        parts.append("<p class=muted>No built-in rule fired on these samples (logs alone carry no ProcessQueue "
                     "or lag series; the findings above come from reading them directly).</p>")
    parts.append(_events_table(report))
    if stats := stats_lines(report.events):
        parts.append("<h2 id=stats>Broker stats (stats.log, messages per second)</h2><ul>"
                     + "".join(f"<li>{e(line)}</li>" for line in stats) + "</ul>")
    if report.stuck:
        parts.append("<h2 id=threads>Stuck threads</h2><table><tr><th>JVM</th><th>thread</th><th>waits on</th>"
                     "<th>top frame</th><th>called from</th></tr>")
        parts += [f"<tr><td>{e(s.jvm)}</td><td>{e(s.thread.thread)}</td><td>{e(s.blocking)}</td>"
                  f"<td>{e(s.thread.top_frame)}</td><td>{e(s.thread.app_frame or '')}</td></tr>" for s in report.stuck]
        parts.append("</table>")
    if report.problems or report.skipped:
        parts.append("<h2 id=unread>Not read</h2><ul>" + "".join(f"<li>{e(str(p))}</li>" for p in report.problems)
                     + "".join(f"<li>{e(line)}</li>" for line in by_folder(report.skipped)) + "</ul>")
    if report.unused:
        parts.append("<h2 id=unused>Not used</h2><ul>" + "".join(f"<li>{e(line)}</li>" for line in by_folder(report.unused))
                     + "</ul>")
    parts.append("<p class=muted>Inputs: " + "; ".join(e(f"{w} {p}") for p, w, _ in report.files) + "</p>")
    return "".join(parts) + "</body></html>\n"


def _charts(report: Report) -> str:
    charts = []
    spans: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
    for ev in report.events:
        if ev["event"].startswith("flow_control") and ev["value"] is not None:
            spans[f"{ev['group']} {ev['topic']}/{ev['broker']}/{ev['queue_id']} ({ev['event'][13:]})"].append(
                (ev["ts"], ev["value"]))
    for name, points in sorted(spans.items()):
        charts.append((f"flow control {name}", points, 2000.0 if name.endswith("(span)") else None))
    slow = [(m["ts"], float(m.get("put_slow_100ms") or 0)) for m in report.put_minutes]
    if slow:
        charts.append(("puts of 100 ms or more per minute", slow, None))
    lag: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
    for o in report.offsets:
        lag[f"{o['group']} {o['topic']}"].append((o["ts"], float(o["broker_offset"] - o["consumer_offset"])))
    for name, points in sorted(lag.items()):
        if len(points) > 1 and len({t for t, _ in points}) > 1:
            charts.append((f"lag {name}", points, None))
    if not charts:
        return ""
    out = ["<h2 id=charts>Over time</h2>"]
    for title, points, threshold in charts:
        svg = svg_sparkline(sorted(points), threshold, width=360, height=80, title=title)
        out.append(f"<div class=chart><div>{escape(title)}</div>{svg or '<i>one point</i>'}</div>")
    return "".join(out)


def _events_table(report: Report) -> str:
    if not report.events:
        return ""

    def cells(ev: dict[str, Any]) -> str:
        where = "/".join(str(x) for x in (ev["topic"], ev["broker"], ev["queue_id"]) if x is not None)
        value = "" if ev["value"] is None else f"{ev['value']:g}"
        values = (_t(ev["ts"]), ev["event"], ev["group"] or "", where, ev["client_id"] or "", value)
        return "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in values) + "</tr>"

    return ("<h2 id=events>Events from the logs</h2><table><tr><th>time</th><th>event</th><th>group</th><th>queue</th>"
            "<th>client</th><th>value</th></tr>" + "".join(cells(ev) for ev in display_events(report.events)) + "</table>")
