"""Dead-letter findings, saying only what the inputs show about how often each message was retried.

How many times a message is retried before the DLQ is the client's maxReconsumeTimes (sent with
each send-back; -1 means the group's retryMaxTimes, 16 unless changed). Told, in order of weight:
the client's running info (`mqadmin consumerStatus`), then the retry topic's figures (every dead
letter went through %RETRY%<group> once per retry, so retried messages per dead letter bound the
retries from above), and when nothing tells, that 16 is only RocketMQ's default (ref §5.1).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from daemon.offline.analyze.finding import Finding
from daemon.offline.analyze.running_info import ClientSettings

DEFAULT_RETRIES = 16
# messageDelayLevel's default, levels 1..18; a concurrent consumer's retry r (from 0) waits level 3 + r.
_DELAYS_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
_ADVICE = "they are out of the flow: look at a few, fix the cause, re-send them"


def retry_time(retries: int) -> str:
    """The time `retries` retries take at the default delay levels, as `40 s` or `4 h 46 m`."""
    seconds = sum(_DELAYS_S[min(3 + r, len(_DELAYS_S)) - 1] for r in range(retries))
    if seconds >= 3600:
        hours, minutes = divmod(round(seconds / 60), 60)
        return f"{hours} h {minutes} m"
    minutes, secs = divmod(seconds, 60)
    return f"{minutes} m {secs} s" if minutes and secs else f"{minutes} m" if minutes else f"{secs} s"


def dead_letter_findings(topic_queues: list[dict[str, Any]], clients: list[ClientSettings]) -> list[Finding]:
    """One finding per group with messages in its DLQ, its evidence as strong as the inputs allow."""
    dead: dict[str, int] = defaultdict(int)
    retried: dict[str, int] = defaultdict(int)
    for row in topic_queues:
        if row["topic_kind"] == "dlq" and row["group"]:
            dead[row["group"]] += row["max_offset"]
        elif row["topic_kind"] == "retry" and row["group"]:
            retried[row["group"]] += row["max_offset"]
    settings: dict[str, list[ClientSettings]] = defaultdict(list)
    for client in clients:
        settings[client.group].append(client)
    return [_finding(group, count, retried.get(group), settings.get(group, []))
            for group, count in sorted(dead.items()) if count > 0]


def _finding(group: str, dead: int, retried: int | None, clients: list[ClientSettings]) -> Finding:
    evidence = _told_by_clients(clients)
    if retried:
        ratio = retried / dead
        bound = (f", fewer than RocketMQ's default {DEFAULT_RETRIES}" if ratio < DEFAULT_RETRIES else "")
        # Each dead letter passed through the retry topic once per retry; retried messages that later
        # succeeded, or are still retrying, only add to the count: the ratio is an upper bound.
        evidence.append(f"%RETRY%{group} received {retried} message(s) in all and %DLQ%{group} {dead}: at most "
                        f"{ratio:.1f} retries per dead letter{bound}")
    if not clients and retried:
        evidence.append(f"the exact number is the client's maxReconsumeTimes, which these inputs do not hold: "
                        f"`mqadmin consumerStatus -g {group}` shows it")
    elif not clients:
        evidence.append(f"how many times each was retried is not in these inputs: RocketMQ's default is "
                        f"{DEFAULT_RETRIES} retries (about {retry_time(DEFAULT_RETRIES)} at the default delay "
                        f"levels) unless the client sets maxReconsumeTimes; `mqadmin consumerStatus -g {group}` "
                        f"shows it")
    evidence.append(_ADVICE)
    return Finding(group, f"{dead} message(s) in %DLQ%{group}", evidence)


def _told_by_clients(clients: list[ClientSettings]) -> list[str]:
    values = sorted({c.effective_max_reconsume_times for c in clients}, key=lambda v: -1 if v is None else v)
    files = ", ".join(sorted({c.path for c in clients}))
    if not clients:
        return []
    if len(values) > 1:
        shown = ", ".join("unlimited (orderly)" if v is None else str(v) for v in values)
        return [f"the group's clients do not agree: maxReconsumeTimes {shown} (running info in {files})"]
    (retries,) = values
    if retries is None:
        return [f"the client consumes orderly with maxReconsumeTimes -1: it retries in place without end and "
                f"sends nothing to the DLQ, so these dead letters come from an earlier setting or another client "
                f"(running info in {files})"]
    set_as = ("-1, i.e. the default" if clients[0].max_reconsume_times < 0 else str(retries))
    return [f"each was delivered {retries + 1} time(s) and failed every time: maxReconsumeTimes {set_as} in the "
            f"client's running info ({files}), about {retry_time(retries)} of retries at the default delay levels"]
