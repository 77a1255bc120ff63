"""The Kafka producer: ``Producer`` (confluent-kafka compatible, plus columnar
``produce_batch``)."""

from .producer import Producer

__all__ = ["Producer"]
