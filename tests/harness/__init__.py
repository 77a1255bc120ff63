"""Real-broker test harness: Tansu, librdkafka's mock cluster, or an external cluster.

Fixtures are registered by ``tests/conftest.py``; helpers are imported from here.
"""

from harness.brokers import Broker, ExternalCluster, external_from_env
from harness.kcat import kcat_path
from harness.topics import create_topic, unique_topic

__all__ = [
    "Broker",
    "ExternalCluster",
    "create_topic",
    "external_from_env",
    "kcat_path",
    "unique_topic",
]
