"""The shared tables, versioned: one SQL text for PostgreSQL and SQLite (times are seconds since the epoch,
JSON is text), applied in order at open; entry i brings the schema to version i + 1.

Never edit an entry once released: append one. Two daemons starting together are serialised by the
caller (PostgreSQL: an advisory lock taken first in the migrating transaction; SQLite: BEGIN IMMEDIATE).
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    """
    -- The lease: who may dispatch. Taken and renewed by compare-and-set against the coordinator's clock;
    -- epoch grows with every new holder, and every shared write names the epoch it was made under.
    CREATE TABLE coord_lease (
        name        TEXT PRIMARY KEY,
        holder      TEXT NOT NULL,               -- node name and process instance of the holder
        epoch       BIGINT NOT NULL,
        expires_at  DOUBLE PRECISION NOT NULL,   -- seconds since the epoch, coordinator's clock
        acquired_at DOUBLE PRECISION NOT NULL,   -- when this epoch began
        renewed_at  DOUBLE PRECISION NOT NULL
    );
    -- Sequence numbers of sends, never reused (a group closed and reopened keeps counting up), so
    -- the idempotency keys derived from them never repeat.
    CREATE TABLE coord_counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
    INSERT INTO coord_counters (name, value) VALUES ('send_seq', 0);
    -- The content-based notification log: per route, receiver and alert group, what its receiver
    -- was told (firing fingerprints with severity, resolves), when, and the receiver's reply
    -- (Slack channel/ts, email Message-ID). Pending = the holder's current alerts minus this.
    CREATE TABLE coord_log (
        route            TEXT NOT NULL,
        receiver         TEXT NOT NULL,
        group_key        TEXT NOT NULL,
        group_labels     TEXT NOT NULL,          -- JSON object
        told_firing      TEXT NOT NULL,          -- JSON object: fingerprint -> severity
        told_resolved    TEXT NOT NULL,          -- JSON object: fingerprint -> seconds told
        first_pending_at DOUBLE PRECISION,
        last_sent_at     DOUBLE PRECISION,
        last_reason      TEXT,
        seq              BIGINT NOT NULL,        -- latest send's sequence number (0: none yet)
        sent_seq         BIGINT NOT NULL,        -- latest send confirmed by its receiver
        receiver_data    TEXT NOT NULL,          -- JSON object
        closed           INTEGER NOT NULL,       -- 1: nothing firing, nothing pending
        epoch            BIGINT NOT NULL,        -- the lease epoch of the last write
        PRIMARY KEY (route, receiver, group_key)
    );
    -- The send protocol: an intent before the send, its sent record (with the reply) after.
    CREATE TABLE coord_sends (
        seq             BIGINT PRIMARY KEY,
        route           TEXT NOT NULL,
        receiver        TEXT NOT NULL,
        group_key       TEXT NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        epoch           BIGINT NOT NULL,
        holder          TEXT NOT NULL,
        told            TEXT NOT NULL,           -- JSON: {"firing": {fp: severity}, "resolved": [fp]}
        reason          TEXT NOT NULL,
        intent_at       DOUBLE PRECISION NOT NULL,  -- when first recorded (a later holder's retry keeps it)
        attempts        INTEGER NOT NULL,        -- holders that recorded this intent
        outcome         TEXT,                    -- NULL open, 'sent', 'superseded'
        sent_at         DOUBLE PRECISION,
        reply           TEXT                     -- JSON object: the receiver's answer
    );
    CREATE INDEX coord_sends_open ON coord_sends (route, receiver, group_key, outcome);
    -- Incidents' identity: every daemon takes the id of the incident open at a locus before opening one.
    CREATE TABLE coord_incidents (
        id          TEXT PRIMARY KEY,
        locus       TEXT NOT NULL,               -- JSON object, keys sorted
        opened_at   DOUBLE PRECISION NOT NULL,
        resolved_at DOUBLE PRECISION,
        opened_by   TEXT NOT NULL
    );
    CREATE UNIQUE INDEX coord_incidents_open_locus ON coord_incidents (locus) WHERE resolved_at IS NULL;
    """,
    """
    -- Silences and acknowledgements made on any daemon (status page, API, CLI, Slack buttons), shared:
    -- each daemon keeps its own copy in its state file and mirrors it here both ways. Not fenced: an
    -- operator's silence is as valid from a standby as from the holder; the newer update of a row wins.
    -- `version` orders every accepted write (counter 'shared_actions'), so a daemon pulls what changed.
    CREATE TABLE coord_silences (
        id          TEXT PRIMARY KEY,            -- uuid made by the daemon that took the silence
        matchers    TEXT NOT NULL,               -- JSON list of matcher strings
        starts_at   DOUBLE PRECISION NOT NULL,
        ends_at     DOUBLE PRECISION NOT NULL,   -- an expire is an earlier ends_at
        created_by  TEXT NOT NULL,
        comment     TEXT NOT NULL,
        created_at  DOUBLE PRECISION NOT NULL,
        updated_at  DOUBLE PRECISION NOT NULL,   -- the writer's clock: the newer update wins
        written_by  TEXT NOT NULL,               -- the node whose write is kept
        version     BIGINT NOT NULL
    );
    CREATE INDEX coord_silences_version ON coord_silences (version);
    -- Acknowledgements and until-resolved silences of alert groups; `at` tells one from the next
    -- (the group resolved and fired again), `closed_at` ends it (the group resolved on the holder).
    CREATE TABLE coord_group_actions (
        group_key   TEXT NOT NULL,
        kind        TEXT NOT NULL,               -- 'ack' or 'silence_until_resolved'
        actor       TEXT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        silence_id  TEXT,
        matchers    TEXT NOT NULL,               -- JSON list of matcher strings
        closed_at   DOUBLE PRECISION,
        updated_at  DOUBLE PRECISION NOT NULL,
        written_by  TEXT NOT NULL,
        version     BIGINT NOT NULL,
        PRIMARY KEY (group_key, kind)
    );
    CREATE INDEX coord_group_actions_version ON coord_group_actions (version);
    INSERT INTO coord_counters (name, value) VALUES ('shared_actions', 0);
    """,
    """
    -- The peers: one row per daemon node, written after each of its lease renewals, so `rocketwatch ha
    -- status` and every status page show who takes part, when each was last heard of and what it holds.
    CREATE TABLE coord_peers (
        node          TEXT PRIMARY KEY,          -- ha.node (default the host name): a restart keeps its row
        holder        TEXT NOT NULL,             -- node/process instance, as in coord_lease.holder
        host          TEXT NOT NULL,
        version       TEXT NOT NULL,             -- rocketwatch's version on that node
        started_at    DOUBLE PRECISION NOT NULL, -- when that process started (its own clock)
        renew_at      DOUBLE PRECISION NOT NULL, -- its last renewal (coordinator's clock): written right after it
        evaluated_at  DOUBLE PRECISION,          -- its last completed evaluation (its own clock)
        held          INTEGER NOT NULL,          -- notifications it holds for want of a coordinator
        holds_lease   INTEGER NOT NULL           -- 1: it held the dispatch lease after that renewal
    );
    """,
]


def statements(script: str) -> list[str]:
    """The statements of one migration (no ';' inside strings or comments in ours), comments dropped."""
    body = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [s.strip() for s in body.split(";") if s.strip()]
