"""The status page's "what each group is judged on" section (issue 45 step 4), from daemon/common/judged_on.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from daemon.common.judged_on import BROKER_SIDE, GroupBasis

TITLE = '<h2 id="judged">What each group is judged on</h2>'


def _row(basis: GroupBasis) -> str:
    checks = "<br>".join(
        f'<span class="{"bad" if check == BROKER_SIDE else "ok"}">{escape(check)}</span>' for check in basis.checks)
    why = "<br>".join(escape(w) for w in basis.why)
    notes = "".join(f'<br><span class="muted">{escape(n)}</span>' for n in basis.notes)
    skipped = "".join(f"<br><b>not {escape(', '.join(s.rules))}</b>: {escape(s.why)}" for s in basis.skipped)
    return (f"<tr><td>{escape(basis.cluster)}</td><td>{escape(basis.group)}</td><td>{checks}</td>"
            f"<td>{why}{notes}{skipped}</td>"
            f'<td><details><summary>{len(basis.rules)} rule(s)</summary>{escape(", ".join(basis.rules))}</details>'
            "</td></tr>")


def judged_section(by_cluster: Mapping[str, Sequence[GroupBasis]]) -> str:
    """Per consumer group of each cluster's last collection: its checks (ProcessQueue, pop, broker-side
    only), why, the rules that can judge it, and the rules whose own filters skip it."""
    rows = [_row(b) for _, bases in sorted(by_cluster.items()) for b in bases]
    if not rows:
        return f'{TITLE}<p class="muted">No consumer group collected yet.</p>'
    return (f'{TITLE}<p class="muted">From each cluster\'s last collection; broker-side only means no running info '
            "came back for the group's clients, so nothing on the client side is judged.</p>"
            "<table><tr><th>cluster</th><th>group</th><th>checks</th><th>why</th><th>rules</th></tr>"
            f"{''.join(rows)}</table>")
