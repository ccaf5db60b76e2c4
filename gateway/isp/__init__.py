"""Sans-I/O tinyISP: contracts between an ISP and its clients over tinySSB feeds.

:class:`IspEngine` is the facade; see ``docs/tinyisp.md``.
"""

from .engine import IspEngine
from .messages import MessageError, decode_message
from .model import ContractParams, IspError, Phase, Role, StateError
from .storage import (
    DirKeyStore,
    DirStateStore,
    KeyStore,
    KeyStoreError,
    MemoryKeyStore,
    MemoryStateStore,
    StateStore,
)
from .views import AskedSubscription, C2cMessage, ContractInfo, SubRequest, Subscription

__all__ = [
    "AskedSubscription",
    "C2cMessage",
    "ContractInfo",
    "ContractParams",
    "DirKeyStore",
    "DirStateStore",
    "IspEngine",
    "IspError",
    "KeyStore",
    "KeyStoreError",
    "MemoryKeyStore",
    "MemoryStateStore",
    "MessageError",
    "Phase",
    "Role",
    "StateError",
    "StateStore",
    "SubRequest",
    "Subscription",
    "decode_message",
]
