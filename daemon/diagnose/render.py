"""The verdict as an operator reads it (text) or as a script reads it (json)."""

from __future__ import annotations

import json
import textwrap

from daemon.diagnose.evidence import QueueEvidence
from daemon.diagnose.verdict import Verdict
from rules.findings import SEVERITY_ORDER, Finding

_COLUMNS = ("queue", "broker off", "committed", "pulled", "lag", "delay", "cached", "span", "MiB", "owner", "marks")


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _vs(value: int | None, limit: int | None) -> str:
    if value is None:
        return "-"
    return f"{value}/{limit}" if limit is not None else str(value)


def _delay(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    return f"{ms / 1000:.0f}s" if ms < 120_000 else f"{ms / 60000:.1f}m"


def _f(value: float | int | None) -> str:
    return "?" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def _pulled(e: QueueEvidence) -> str:
    if e.pulled is None and e.pulled_at_least is not None:
        return f">={e.pulled_at_least}"  # a floor, not a figure (4.x brokers report no pull offset)
    return _n(e.pulled)


def _row(e: QueueEvidence) -> tuple[str, ...]:
    return (e.key, str(e.broker_offset), str(e.committed), _pulled(e), str(e.lag), _delay(e.delay_ms),
            _vs(e.cached_count, e.limit_count), _vs(e.cached_span, e.limit_span),
            _vs(e.cached_size_mib, e.limit_size_mib), e.owner or "-", ",".join(e.marks) or "")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


MAX_QUEUE_ROWS = 16
MAX_STEPS = 3


def _per_rule(findings: list[Finding]) -> list[str]:
    """One line per rule: its worst finding's summary, and how many more series match (every rule
    that has a next step below is listed)."""
    by_rule: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=lambda f: -SEVERITY_ORDER.get(f.severity or "", 0)):
        by_rule.setdefault(f.rule, []).append(f)
    lines = []
    for rule, matched in by_rule.items():
        more = f" (+{len(matched) - 1} more)" if len(matched) > 1 else ""
        lines.append(f"  {rule} [{matched[0].severity}] {' '.join(matched[0].annotations.get('summary', '').split())}"
                     f"{more}")
    return lines


def _basis(v: Verdict) -> list[str]:
    """What the group is judged on and why, and the rules that skip it by their own filters."""
    if v.basis is None:
        return []
    lines = [f"Judged on: {', '.join(v.basis.checks)}"]
    lines += textwrap.wrap("; ".join(v.basis.why), width=100, initial_indent="  ", subsequent_indent="    ")
    lines += textwrap.wrap(f"rules: {', '.join(v.basis.rules) or 'none'}", width=100, initial_indent="  ",
                           subsequent_indent="    ")
    for skip in v.basis.skipped:
        lines += textwrap.wrap(f"not {', '.join(skip.rules)}: {skip.why}", width=100, initial_indent="  ",
                               subsequent_indent="    ")
    lines += [f"  {n}" for n in v.basis.notes]
    return [*lines, ""]


def as_text(v: Verdict) -> str:
    """The verdict, what the group is judged on, evidence table, peers, threads and next steps as plain text."""
    lines = [f"{v.status.upper()}: {v.headline}", "", *_basis(v)]
    if v.evidence:
        marked = [e for e in v.evidence if e.marks]
        shown = marked + [e for e in v.evidence if not e.marks][: max(0, MAX_QUEUE_ROWS - len(marked))]
        lines.append(f"Queues of {v.group} ({len(v.evidence)}; cached/span/MiB are value/client limit; "
                     "marks: SPAN COUNT SIZE at a limit, BLOCKED nothing consumed for 60 s, FROZEN committed "
                     "offset not moving, LAG backlog beyond in-flight):")
        rows = [_COLUMNS] + [_row(e) for e in sorted(shown, key=lambda e: (e.topic, e.broker, e.queue_id))]
        lines += _table(rows)
        if len(shown) < len(v.evidence):
            lines.append(f"  ... {len(v.evidence) - len(shown)} more queue(s) without anomalies")
        lines.append("")
    if v.client_status:
        lines.append("Clients (their own 1-minute statistics):")
        for c in v.client_status:
            lines.append(f"  {c['client_id']}: {c['queues']} queue(s), consume ok {c['consume_ok_tps']:.3g}/s, "
                         f"failed {c['consume_failed_tps']:.3g}/s, RT {c['consume_rt_ms']:.3g} ms, "
                         f"pull {c['pull_tps']:.3g}/s")
        lines.append("")
    lines += [f"Retry and dead letters: %RETRY%{v.group} lag {v.retry_lag}, %DLQ%{v.group} {v.dlq_total} in total"
              + (f", +{v.dlq_growth} during the samples" if v.dlq_growth else ""), ""]
    if v.brokers:
        lines.append("Brokers:")
        for b in v.brokers:
            lines.append(f"  {b['broker']}/{b['broker_id']} {b['addr']} {b['version'] or ''}: put {_f(b['put_tps'])}/s, "
                         f"put p99 {_f(b['put_p99_ms'])} ms, dispatch behind {_f(b['dispatch_behind_bytes'])} B, "
                         f"page cache lock {_f(b['page_cache_lock_ms'])} ms")
        lines.append("")
    if v.peers:
        lines.append("Peers (other groups on the same topic):")
        for p in v.peers:
            state = "LAGGING" if p.lagging else "keeping up"
            lines.append(f"  {p.group}: lag {p.lag}, {p.online_clients} client(s) online, {state}")
        lines.append("")
    if v.threads:
        lines.append("Stuck consume threads (same stack in every dump):")
        for t in v.threads:
            where = f" in {t.app_frame}" if t.app_frame else ""
            lines.append(f"  {t.client_id} {t.thread} {t.state}: {t.top_frame}{where} ({t.dumps} dumps)")
        lines.append("")
    if v.dlq_growth:
        lines += [f"Dead letters: %DLQ%{v.group} grew by {v.dlq_growth} during the samples.", ""]
    if v.findings:
        lines.append("Rules that match now (before their `for:` hold):")
        lines += _per_rule(v.findings)
        lines.append("")
    if v.seen:
        lines.append("Seen in the samples (the rule itself needs more history than these samples):")
        lines += [f"  {f.rule}: {' '.join(f.annotations.get('summary', '').split())}" for f in v.seen]
        lines.append("")
    if v.next_steps:
        # The steps of the rules listed above, in the verdict's order, and of no other rule.
        lines.append("What to do next:")
        for rule, text in v.next_steps[:MAX_STEPS]:
            lines += textwrap.wrap(f"{rule}: {text}", width=100, initial_indent="  ", subsequent_indent="    ")
        lines.append("")
    if v.notes:
        lines.append(f"Calls that failed ({len(v.notes)}):")
        lines += [f"  {n}" for n in v.notes[:10]]
        lines.append("")
    lines.append(f"{v.samples} sample(s); exit {v.exit_code}")
    return "\n".join(lines)


def as_json(v: Verdict, timings: object | None = None) -> str:
    """The verdict as one JSON document (with where the seconds went, when `timings` is given)."""
    doc = v.as_json()
    if timings is not None:
        doc["timings_s"] = {k: round(t, 3) for k, t in vars(timings).items()}
    return json.dumps(doc, indent=2, default=str)
