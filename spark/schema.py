"""The columns of a converted capture and the words the metrics share.

A converted campaign (a *dataset*) keeps one row per capture record except the header:
the capture's fields as they are, plus where the record came from (``file``, byte
``offset``). The rows live in Parquet files under ``records/run=<id>/``, so Spark reads
``run`` as the partition column. ``docs/spark.md`` lists every column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.replication.events import Drop

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = [
    "CHANNEL_REASONS",
    "COLLISION",
    "DUTY_CYCLE",
    "ENTRY_ITEM",
    "KINDS",
    "NODE_REASONS",
    "NO_MATCH",
    "PAYLOAD_KINDS",
    "RECORD_COLUMNS",
    "TRAFFIC_SUMS",
    "arrow_schema",
    "spark_schema",
]

# the traffic counts summed per (run, node, kind) and per node in the tables
TRAFFIC_SUMS = ("tx_frames", "tx_bytes", "tx_air", "rx_frames", "rx_bytes", "rx_air",
                "duplicates", "redundant", "lost", "collisions", "refused", "drops")

# (name, type): "string", "long", "double", "binary"; the order of the Parquet columns
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("file", "string"),     # capture file name the record came from
    ("offset", "long"),     # byte offset of the record in that file
    ("t", "double"),
    ("node", "string"),
    ("dir", "string"),      # rx, tx, drop, store
    ("face", "string"),
    ("frame", "binary"),
    ("kind", "string"),
    ("feed", "binary"),
    ("seq", "long"),
    ("cnr", "long"),
    ("reason", "string"),
    ("rssi", "double"),
    ("snr", "double"),
    ("air", "double"),
)

# frame kinds in the order tables and plots show them
KINDS: tuple[str, ...] = ("claim", "novelty", "want", "chnk", "entry", "chunk", "zap",
                          "unknown")
PAYLOAD_KINDS: tuple[str, ...] = ("entry", "chunk")

# drop reasons given by the Node: the frame reached it intact ("received")
NODE_REASONS: tuple[str, ...] = tuple(d.value for d in Drop)
NO_MATCH = Drop.NO_MATCH.value
# drop reasons given by a channel (the simulator's radio model, a dongle): the frame was lost
COLLISION = "collision"
DUTY_CYCLE = "duty-cycle"  # at the sender: a transmission refused over the duty-cycle limit
CHANNEL_REASONS: tuple[str, ...] = (COLLISION, "half-duplex", "below-sensitivity", DUTY_CYCLE)

ENTRY_ITEM = -1  # the item number of an entry itself; side-chain chunks are 0, 1, ...


def arrow_schema() -> pa.Schema:
    """The record columns as written by the converter (``run`` is in the path)."""
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "double": pa.float64(),
             "binary": pa.binary()}
    return pa.schema([pa.field(name, types[typ]) for name, typ in RECORD_COLUMNS])


def spark_schema() -> StructType:
    """The record columns as Spark reads them, the partition column ``run`` last."""
    from pyspark.sql import types as T

    types = {"string": T.StringType(), "long": T.LongType(), "double": T.DoubleType(),
             "binary": T.BinaryType()}
    fields = [T.StructField(name, types[typ]) for name, typ in RECORD_COLUMNS]
    return T.StructType([*fields, T.StructField("run", T.StringType())])
