"""Hostile input against a live broker: mutated real request frames, and the invariants checked after a run.

`python -m fuzz --seconds 60` (see `fuzz.__main__`) starts a broker in a subprocess, acknowledges 1,000
records on it, then sends it mutated request frames from many connections for the given time, and checks
afterwards, as issue 30 asks:

- the process is alive, and a fresh connection gets ApiVersions;
- the records acknowledged before the run are all read back, and a new topic takes a produce and gives it back;
- the broker's resident memory stayed under a bound the whole run (sampled);
- its log has no traceback.

Corpora (`fuzz.corpus`): `clients`, the frames stock clients sent (recorded by `fuzz.record` into
tests/fixtures/frames/), and `inter-broker`, the controller's and KRaft frames (LeaderAndIsr, UpdateMetadata,
StopReplica, AlterPartition, BrokerRegistration/Heartbeat, the Raft RPCs), built from our own codec.
Mutations (`fuzz.mutate`): bit flips, overwritten bytes, extreme integers where lengths and counts sit,
truncation, random tails, another API version, another API key, and a size prefix that promises more than is
sent. Each connection draws from its own `random.Random` seeded from the run's seed, so a seed names the
frame sequence of each connection.
"""
