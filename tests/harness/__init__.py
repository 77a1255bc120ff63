"""Real-broker test harness: Apache Kafka, Tansu, librdkafka's mock cluster, or an external
cluster.

Fixtures are registered by ``tests/conftest.py``; helpers are imported from here.
"""

from harness.apache_kafka import ApacheKafka, start_apache_kafka
from harness.brokers import Broker, ExternalCluster, external_from_env
from harness.kcat import kcat_path
from harness.mock_cluster import MockCluster, MockClusterError, start_mock_cluster
from harness.ports import free_port
from harness.tansu import TansuBroker, start_tansu
from harness.topics import create_topic, unique_topic, wait_for_topic

__all__ = [
    "ApacheKafka",
    "Broker",
    "ExternalCluster",
    "MockCluster",
    "MockClusterError",
    "TansuBroker",
    "create_topic",
    "external_from_env",
    "free_port",
    "kcat_path",
    "start_apache_kafka",
    "start_mock_cluster",
    "start_tansu",
    "unique_topic",
    "wait_for_topic",
]
