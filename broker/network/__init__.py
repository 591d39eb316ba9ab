"""The broker's sockets (Kafka's kafka.network and the inter-broker NetworkClient).

- `socket_server.py`: `SocketServer` and its `Connection`s: size-prefixed frames in, responses out in request
  order, fetched data by `sendfile` (Kafka's SocketServer and RequestChannel);
- `tls_connection.py`: a connection of an SSL or SASL_SSL listener;
- `inter_broker.py`: the broker's own client connection to other brokers and to the controller.

It uses `broker.security` (principals, the client's TLS and SASL) and never the rooms above it: a connection hands
its frames to whatever handler the server gives it.
"""
