"""Kafka's on-disk log: segments, indexes, checkpoints, leader-epoch cache, producer state, log directories.

``storage`` knows files and bytes; it imports neither ``protocol`` nor ``broker``, only the shared record
codec ``records`` below both. The names re-exported here are the API the broker codes against; every error
names the Kafka error it stands for (``kafka_error``).
"""

from records import BatchHeader
from storage.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile, PartitionMetadataFile
from storage.config import LogConfig
from storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from storage.errors import (
    CorruptIndexError,
    CorruptLogError,
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    StorageError,
    TransactionCoordinatorFencedError,
    UnexpectedAppendOffsetError,
)
from storage.index import OffsetIndex, TimeIndex
from storage.log import Log
from storage.log_manager import LogManager
from storage.log_validator import AppendOrigin
from storage.producer_state import (
    ProducerStateEntry,
    ProducerStateManager,
    ProducerStateManagerConfig,
    VerificationGuard,
)
from storage.segment import LogSegment
from storage.transaction_index import AbortedTxn, TransactionIndex
from storage.values import FetchDataInfo, FileSlice, LogAppendInfo, LogOffsetMetadata, TopicPartition

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AbortedTxn",
    "AppendOrigin",
    "BatchHeader",
    "CorruptIndexError",
    "CorruptLogError",
    "CorruptRecordError",
    "DuplicateSequenceError",
    "FetchDataInfo",
    "FileSlice",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LeaderEpochCheckpointFile",
    "LeaderEpochFileCache",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "LogOffsetMetadata",
    "LogSegment",
    "OffsetCheckpointFile",
    "OffsetIndex",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionMetadataFile",
    "ProducerStateEntry",
    "ProducerStateManager",
    "ProducerStateManagerConfig",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "TimeIndex",
    "TopicPartition",
    "TransactionCoordinatorFencedError",
    "UnexpectedAppendOffsetError",
    "TransactionIndex",
    "VerificationGuard",
]
