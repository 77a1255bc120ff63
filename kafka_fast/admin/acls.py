"""ACLs: AclBinding / AclBindingFilter and their enums (confluent-kafka's names and values),
and CreateAcls / DescribeAcls / DeleteAcls."""

from __future__ import annotations

import functools
from concurrent.futures import Future
from enum import Enum
from typing import Any

from ..errors import KafkaError
from ..net.client import KafkaClient
from ..protocol import messages as m
from .calls import ANY, AdminCall, error_of
from .model import _Ordered, to_enum
from .resources import ResourceType

#: Kafka's "authorized operations not asked for" marker (INT32_MIN).
_NOT_PROVIDED = -(2**31)


class AclOperation(_Ordered):
    """Operations an ACL allows or denies (protocol values)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_Ordered):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourcePatternType(_Ordered):
    """How an ACL's resource name matches: LITERAL, PREFIXED (or, in filters, ANY/MATCH)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


def authorized_operations(bits: int | None) -> list[AclOperation] | None:
    """The operations set in a broker's authorized-operations bit field (None when the
    broker did not say), in protocol order, as confluent-kafka lists them."""
    if bits is None or bits == _NOT_PROVIDED:
        return None
    out = []
    for op in AclOperation:
        if op.value > AclOperation.ANY.value and bits & (1 << op.value):
            out.append(op)
    return out


@functools.total_ordering
class AclBinding:
    """An ACL: ``principal`` (``"User:alice"``) on ``host`` may (ALLOW) or may not (DENY)
    perform ``operation`` on the resources ``restype``/``name``/``resource_pattern_type``
    describe. Enums may be given as members, names or numbers."""

    _NOT_NONE: tuple[str, ...] = ("restype", "name", "resource_pattern_type", "principal",
                                  "host", "operation", "permission_type")
    _FORBIDDEN: dict[str, tuple[Enum, ...]] = {
        "restype": (ResourceType.ANY,),
        "resource_pattern_type": (ResourcePatternType.ANY, ResourcePatternType.MATCH),
        "operation": (AclOperation.ANY,),
        "permission_type": (AclPermissionType.ANY,),
    }

    def __init__(self, restype: ResourceType | str | int, name: str | None,
                 resource_pattern_type: ResourcePatternType | str | int,
                 principal: str | None, host: str | None,
                 operation: AclOperation | str | int,
                 permission_type: AclPermissionType | str | int) -> None:
        values = {"restype": restype, "name": name,
                  "resource_pattern_type": resource_pattern_type, "principal": principal,
                  "host": host, "operation": operation, "permission_type": permission_type}
        for attr in self._NOT_NONE:
            if values[attr] is None:
                raise ValueError(f"Expected {attr} to be not None")
        for attr in ("name", "principal", "host"):
            if values[attr] is not None and not isinstance(values[attr], str):
                raise TypeError(f"Expected {attr} to be a string")
        self.restype = to_enum(restype, ResourceType)
        self.name = name
        self.resource_pattern_type = to_enum(resource_pattern_type, ResourcePatternType)
        self.principal = principal
        self.host = host
        self.operation = to_enum(operation, AclOperation)
        self.permission_type = to_enum(permission_type, AclPermissionType)
        for attr, forbidden in self._FORBIDDEN.items():
            value = getattr(self, attr)
            if value in forbidden:
                raise ValueError(f"Cannot use enum {attr}, value {value.name} in this class")
        self.restype_int = self.restype.value
        self.resource_pattern_type_int = self.resource_pattern_type.value
        self.operation_int = self.operation.value
        self.permission_type_int = self.permission_type.value

    def _to_tuple(self) -> tuple:
        return (self.restype, self.name, self.resource_pattern_type, self.principal,
                self.host, self.operation, self.permission_type)

    def __repr__(self) -> str:
        return "{}({},{},{},{},{},{},{})".format(type(self).__name__, *self._to_tuple())

    def __hash__(self) -> int:
        return hash(self._to_tuple())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return self._to_tuple() == other._to_tuple()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return _sort_key(self) < _sort_key(other)


def _sort_key(b: AclBinding) -> tuple:
    return tuple("" if v is None else v for v in b._to_tuple())


class AclBindingFilter(AclBinding):
    """A pattern over ACLs: None strings and ANY enums match anything; a
    ResourcePatternType.MATCH name matches literal, wildcard and prefixed ACLs."""

    _NOT_NONE = ("restype", "resource_pattern_type", "operation", "permission_type")
    _FORBIDDEN = {
        "restype": (ResourceType.UNKNOWN,),
        "resource_pattern_type": (ResourcePatternType.UNKNOWN,),
        "operation": (AclOperation.UNKNOWN,),
        "permission_type": (AclPermissionType.UNKNOWN,),
    }


def _binding(restype: int, name: str, pattern: int, principal: str, host: str,
             operation: int, permission: int) -> AclBinding:
    return AclBinding(restype, name, pattern, principal, host, operation, permission)


def _check_list(items: Any, cls: type, what: str) -> list[Any]:
    """confluent-kafka's checks: a list of ``cls`` (ValueError otherwise), no duplicates."""
    if not isinstance(items, list):
        raise TypeError(f"Expected a list of {cls.__name__}")
    for item in items:
        if not isinstance(item, cls) or (cls is AclBinding and isinstance(item, AclBindingFilter)):
            raise ValueError(f"Expected list of {cls!r}")
    if len(set(items)) != len(items):
        raise ValueError(f"duplicate {what} not allowed")
    return items


def create_acls(client: KafkaClient, acls: list[AclBinding], timeout: float
                ) -> dict[AclBinding, Future]:
    """CreateAcls (any broker forwards it to the controller); ``{binding: Future of None}``."""
    items = _check_list(acls, AclBinding, "ACL bindings")
    Creation = m.CreateAclsRequest.AclCreation

    def build(group: list[AclBinding]) -> m.CreateAclsRequest:
        return m.CreateAclsRequest(creations=[Creation(
            resource_type=b.restype_int, resource_name=b.name,
            resource_pattern_type=b.resource_pattern_type_int, principal=b.principal,
            host=b.host, operation=b.operation_int, permission_type=b.permission_type_int)
            for b in group])

    def parse(resp: Any, group: list[AclBinding]) -> dict[AclBinding, Any]:
        return dict(zip(group, [error_of(r.error_code, r.error_message)
                                for r in resp.results], strict=True))

    return AdminCall(client, items, build, parse, lambda _: ANY, timeout).start()


def describe_acls(client: KafkaClient, acl_binding_filter: AclBindingFilter, timeout: float
                  ) -> Future:
    """DescribeAcls on any broker; a Future of the matching AclBindings (a list)."""
    if not isinstance(acl_binding_filter, AclBindingFilter):
        raise TypeError("Expected an AclBindingFilter")
    f = acl_binding_filter

    def build(_: list[AclBindingFilter]) -> m.DescribeAclsRequest:
        return m.DescribeAclsRequest(
            resource_type_filter=f.restype_int, resource_name_filter=f.name,
            pattern_type_filter=f.resource_pattern_type_int, principal_filter=f.principal,
            host_filter=f.host, operation=f.operation_int,
            permission_type=f.permission_type_int)

    def parse(resp: Any, _: list[AclBindingFilter]) -> dict[AclBindingFilter, Any]:
        err = error_of(resp.error_code, resp.error_message)
        return {f: err if err is not None else [
            _binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                     a.operation, a.permission_type)
            for r in resp.resources for a in r.acls]}

    return AdminCall(client, [f], build, parse, lambda _: ANY, timeout).start()[f]


def delete_acls(client: KafkaClient, acl_binding_filters: list[AclBindingFilter],
                timeout: float) -> dict[AclBindingFilter, Future]:
    """DeleteAcls (forwarded to the controller); ``{filter: Future of the deleted
    AclBindings}``."""
    items = _check_list(acl_binding_filters, AclBindingFilter, "ACL binding filters")
    Filter = m.DeleteAclsRequest.DeleteAclsFilter

    def build(group: list[AclBindingFilter]) -> m.DeleteAclsRequest:
        return m.DeleteAclsRequest(filters=[Filter(
            resource_type_filter=f.restype_int, resource_name_filter=f.name,
            pattern_type_filter=f.resource_pattern_type_int, principal_filter=f.principal,
            host_filter=f.host, operation=f.operation_int,
            permission_type=f.permission_type_int) for f in group])

    def parse(resp: Any, group: list[AclBindingFilter]) -> dict[AclBindingFilter, Any]:
        out: dict[AclBindingFilter, Any] = {}
        for f, r in zip(group, resp.filter_results, strict=True):
            err = error_of(r.error_code, r.error_message)
            if err is None:
                failed = [a for a in r.matching_acls if a.error_code]
                if failed:
                    err = KafkaError.of(failed[0].error_code, failed[0].error_message or None)
            out[f] = err if err is not None else [
                _binding(a.resource_type, a.resource_name, a.pattern_type, a.principal,
                         a.host, a.operation, a.permission_type) for a in r.matching_acls]
        return out

    return AdminCall(client, items, build, parse, lambda _: ANY, timeout).start()

