"""Transactions: the transaction coordinator role of a transactional producer."""

from .manager import GroupIdentity, TransactionManager, group_identity
from .state import TxnState

__all__ = ["GroupIdentity", "TransactionManager", "TxnState", "group_identity"]
