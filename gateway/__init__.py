"""tinySSB for real radios: the node, its store, replication and the `tinyssb` command."""

__version__ = "0.1.0"
