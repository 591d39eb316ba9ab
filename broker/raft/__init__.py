"""The Raft layer of `__cluster_metadata` (Kafka's `kafka.raft` and `org.apache.kafka.raft`; KIP-595, the pre-vote
of KIP-996), for the controller quorum of issue 32.

Contract:
- `client.RaftClient`: a voter of a static quorum as a sans-I/O state machine (time and messages in, messages
  out): elections with pre-vote, the leader's appends and high watermark, followers' fetches and truncation, the
  listener interface a controller builds on (`RaftListener`: `handle_commit`, `handle_leader_change`).
- `raft_log.RaftLog`: the log on disk in Kafka's segment format (`storage.Log`); `quorum_state`: the
  `quorum-state` file in Kafka's format; `messages`: the four RPCs in the codec's classes; `config`: the
  `controller.quorum.*` timings; `driver.RaftDriver`: the client over sockets on asyncio (the inter-broker
  client out, `handle_request` for a server's incoming Raft requests).
- The controller on top is broker/quorum/ (which also keeps the observers' bookkeeping). Not here yet:
  snapshots, dynamic voters (docs/kraft.md, "The Raft layer").
"""
