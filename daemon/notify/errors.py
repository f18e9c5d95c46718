"""How a failed send is retried: a receiver says whether trying again can help, and when."""

from __future__ import annotations


class DeliveryError(Exception):
    """A send that failed. `retryable` False: the receiver refused for good (bad token, unknown
    channel, rejected address) and only an operator's fix helps; the outbox still keeps the row and
    tries at its longest interval, so nothing is lost once the fix is in."""

    def __init__(self, message: str, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after

    @property
    def kind(self) -> str:
        """retryable or permanent, for logs and metrics."""
        return "retryable" if self.retryable else "permanent"
