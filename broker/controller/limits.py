"""How much one admin request may change at once: Kafka's controller bound on the records of a user operation.

Kafka's QuorumController refuses any single user operation that would write more than `MAX_RECORDS_PER_USER_OP`
(10,000) metadata records (`BoundedList`, `BoundedListTooLongException`): CreateTopics (a TopicRecord, a
PartitionRecord per partition and a ConfigRecord per config of each topic), CreatePartitions, config changes,
ACLs and client quotas alike. The whole operation fails and every item of the request is answered
POLICY_VIOLATION "Unable to perform excessively large batch operation." (`EventHandlerExceptionInfo`), except in
CreatePartitions, which catches the overflow per topic: that topic is answered UNKNOWN_SERVER_ERROR without a
message (`ApiError.fromThrowable`). We count before anything is computed or written, so a request asking for
two billion partitions costs a multiplication, not two billion list entries.
"""

from __future__ import annotations

MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def too_many_records(count: int) -> bool:
    return count > MAX_RECORDS_PER_USER_OP
