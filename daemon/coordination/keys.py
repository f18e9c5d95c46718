"""Idempotency keys every daemon derives alike: from (receiver, group key, the shared log's sequence number).

Today's keys are a uuid4 per daemon, so a send retried by another daemon looks new to the receiver.
Derived keys make the retry recognisable: the email Message-ID, the webhook's idempotency header and
body field, and the key a Slack message carries in its metadata are all this one key.
"""

from __future__ import annotations

import hashlib

KEY_LENGTH = 32  # hex digits: 128 bits, as many as the uuid4 it replaces


def idempotency_key(receiver: str, group_key: str, seq: int) -> str:
    """The key of send number `seq` of a group to a receiver; the same on every daemon."""
    if seq < 1:
        raise ValueError(f"sequence number {seq} of {group_key} for {receiver!r}: sends are numbered from 1")
    # NUL cannot occur in a receiver name or a group key: no two triples join to the same text.
    text = f"{receiver}\0{group_key}\0{seq}"
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def email_message_id(key: str, domain: str = "rocketwatch.invalid") -> str:
    """The Message-ID of the mail a key stands for (RFC 5322 msg-id), as daemon/notify/email.py writes it
    from a notification's idempotency key: every daemon names a retried mail alike."""
    return f"<{key}.rocketwatch@{domain}>"
