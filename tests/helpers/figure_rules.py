"""Rules whose levels read differently: one no row can miss (-1), one its `where` already requires, one plain."""

FIGURE_RULES = """\
groups:
  - name: figures
    rules:
      - alert: TargetFailing
        kind: threshold
        table: collector_health
        value: latency_ms
        where: not ok
        above: {critical: -1}
        by: [cluster, target, call]
        summary: "{call} to {target} fails"
        diagnosis: "the target does not answer this call"
        next_steps: "nc -vz {target}"
      - alert: TargetDegraded
        kind: threshold
        table: collector_health
        value: latency_ms
        where: not ok and latency_ms > 0
        above: {warning: 0}
        by: [cluster, target, call]
        summary: "{call} to {target} fails"
        diagnosis: "the target does not answer this call"
        next_steps: "nc -vz {target}"
      - alert: SlowPuts
        kind: threshold
        table: broker
        value: put_p99_ms
        above: {warning: 100}
        by: [cluster, broker]
        summary: "{broker} puts slowly"
        diagnosis: "the disk is slow"
        next_steps: "iostat -x 1"
"""
