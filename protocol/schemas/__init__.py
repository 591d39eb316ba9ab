"""Kafka JSON message specs (Kafka 3.9 layouts) for the APIs kafka-python does not ship.

Loaded through kafka-python's own JSON machinery (`load_json=` on the message class), so these
messages get the same compiled codecs and data classes as the bundled ones.
"""
