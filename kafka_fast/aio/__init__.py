"""asyncio clients with confluent-kafka's ``confluent_kafka.aio`` names and semantics.

``AIOProducer``: ``await producer.produce(...)`` queues the record at once (waiting only while
the local queue is full) and returns a future that resolves to the delivered ``Message`` or
raises ``KafkaException``; ``await producer.produce_batch(...)`` resolves when every record of
the batch is delivered. ``AIOConsumer``: every consumer call runs on a worker thread, serialized,
so the event loop never blocks; ``async for view in consumer.batches(...)`` yields columnar
``RecordBatchView``s. Callbacks in the configuration (``error_cb``, ``throttle_cb``,
``stats_cb``, ``on_commit``) and the rebalance callbacks of ``subscribe`` may be coroutine
functions: they run on the event loop. ``AsyncSerializingProducer`` and
``AsyncDeserializingConsumer`` (created with ``await``) add ``key.serializer`` /
``value.serializer`` (``key.deserializer`` / ``value.deserializer``), plain or asyncio ones.
``AIOShareConsumer``: the share-group consumer (KIP-932), its calls on one worker thread.
"""

from .consumer import AIOConsumer
from .deserializing_consumer import AsyncDeserializingConsumer
from .producer import AIOProducer
from .serializing_producer import AsyncSerializingProducer
from .share_consumer import AIOShareConsumer

__all__ = ["AIOConsumer", "AIOProducer", "AIOShareConsumer", "AsyncDeserializingConsumer",
           "AsyncSerializingProducer"]
