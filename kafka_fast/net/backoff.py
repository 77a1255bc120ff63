"""``Backoff`` lives in ``kafka_fast.backoff`` (shared with the cluster package)."""

from ..backoff import Backoff

__all__ = ["Backoff"]
