"""Listener security: TLS (`tls`), SASL authentication (`sasl`, `scram`) and the principal a connection
acts as. Configured with Kafka's keys, per listener (`listener.name.<listener>.<key>` over `<key>`)."""
