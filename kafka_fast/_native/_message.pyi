"""Types of the compiled ``Message`` (``_message.pyx``; twin: ``kafka_fast._pure.message``):
the public module's (the class calls itself ``kafka_fast.message.Message``)."""

from kafka_fast.message import Message as Message
from kafka_fast.message import build as build
