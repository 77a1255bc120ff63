"""Resource configurations: DescribeConfigs, AlterConfigs (whole sets, deprecated) and
IncrementalAlterConfigs. Broker resources go to that broker, others to ``broker`` when
given, else to any broker (which forwards changes to the controller)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ..net.client import KafkaClient
from ..protocol import messages as m
from ..protocol.versioned import versioned
from .calls import ANY, AdminCall, error_of
from .resources import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType


def _target(broker: int):
    def target(resource: Any) -> Any:
        if resource.restype in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
            try:
                return int(resource.name)
            except ValueError:
                raise ValueError(f"broker resource name must be a broker id: "
                                 f"{resource.name!r}") from None
        return broker if broker >= 0 else ANY
    return target


def check_resources(resources: Any) -> list[ConfigResource]:
    """confluent-kafka's checks: a list of ConfigResource (ValueError otherwise), each once,
    names given."""
    if not isinstance(resources, list):
        raise TypeError("Expected a list of ConfigResource")
    for r in resources:
        if not isinstance(r, ConfigResource):
            raise ValueError(f"Expected list of {ConfigResource!r}")
    if len(set(resources)) != len(resources):
        raise ValueError("Duplicate ConfigResource in the request")
    for r in resources:
        _target(-1)(r)  # a broker resource's name must be its id
    return resources


def describe_configs(client: KafkaClient, resources: list[ConfigResource], broker: int,
                     include_synonyms: bool, include_documentation: bool, timeout: float
                     ) -> dict[ConfigResource, Future]:
    """``{resource: Future of {name: ConfigEntry}}``."""
    Resource = m.DescribeConfigsRequest.DescribeConfigsResource

    def build(group: list[ConfigResource]) -> Any:
        return versioned(m.DescribeConfigsRequest, lambda: m.DescribeConfigsRequest(
            resources=[Resource(resource_type=r.restype_int, resource_name=r.name,
                                configuration_keys=None) for r in group],
            include_synonyms=include_synonyms, include_documentation=include_documentation))

    def parse(resp: Any, _: list[ConfigResource]) -> dict[ConfigResource, Any]:
        out: dict[ConfigResource, Any] = {}
        for r in resp.results:
            key = ConfigResource(r.resource_type, r.resource_name)
            err = error_of(r.error_code, r.error_message)
            out[key] = err if err is not None else {
                c.name: config_entry(c, include_documentation) for c in r.configs}
        return out

    return AdminCall(client, resources, build, parse, _target(broker), timeout).start()


def alter_configs(client: KafkaClient, resources: list[ConfigResource], broker: int,
                  validate_only: bool, timeout: float) -> dict[ConfigResource, Future]:
    """Replace each resource's whole configuration with its ``set_config`` values (unset
    ones revert to defaults); ``{resource: Future of None}``."""
    Resource = m.AlterConfigsRequest.AlterConfigsResource
    Alterable = m.AlterConfigsRequest.AlterConfigsResource.AlterableConfig
    by_key = {r: r for r in resources}

    def build(group: list[ConfigResource]) -> m.AlterConfigsRequest:
        return m.AlterConfigsRequest(resources=[Resource(
            resource_type=by_key[r].restype_int, resource_name=by_key[r].name,
            configs=[Alterable(name=k, value=v)
                     for k, v in by_key[r].set_config_dict.items()]) for r in group],
            validate_only=validate_only)

    def parse(resp: Any, _: list[ConfigResource]) -> dict[ConfigResource, Any]:
        return {ConfigResource(r.resource_type, r.resource_name):
                error_of(r.error_code, r.error_message) for r in resp.responses}

    return AdminCall(client, resources, build, parse, _target(broker), timeout).start()


def incremental_alter_configs(client: KafkaClient, resources: list[ConfigResource],
                              broker: int, validate_only: bool, timeout: float
                              ) -> dict[ConfigResource, Future]:
    """Apply each resource's ``incremental_configs``; ``{resource: Future of None}``."""
    for r in resources:
        for entry in r.incremental_configs:
            if not isinstance(entry.incremental_operation, AlterConfigOpType):
                raise ValueError(f"ConfigEntry {entry.name!r} of {r!r} needs an "
                                 "incremental_operation (AlterConfigOpType)")
    by_key = {r: r for r in resources}
    Resource = m.IncrementalAlterConfigsRequest.AlterConfigsResource
    Alterable = m.IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig

    def build(group: list[ConfigResource]) -> m.IncrementalAlterConfigsRequest:
        return m.IncrementalAlterConfigsRequest(
            resources=[Resource(
                resource_type=by_key[r].restype_int, resource_name=by_key[r].name,
                configs=[Alterable(name=e.name, config_operation=_operation(e),
                                   value=e.value)
                         for e in by_key[r].incremental_configs])
                for r in group],
            validate_only=validate_only)

    def parse(resp: Any, _: list[ConfigResource]) -> dict[ConfigResource, Any]:
        return {ConfigResource(r.resource_type, r.resource_name):
                error_of(r.error_code, r.error_message) for r in resp.responses}

    return AdminCall(client, resources, build, parse, _target(broker), timeout).start()


def _source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN_CONFIG


def config_entry(c: Any, with_documentation: bool = False) -> ConfigEntry:
    """A DescribeConfigs answer entry as a ConfigEntry (synonyms keyed by name)."""
    source = _source(getattr(c, "config_source", -1))
    is_default = getattr(c, "is_default", False) or source == ConfigSource.DEFAULT_CONFIG
    synonyms = {s.name: ConfigEntry(s.name, s.value, _source(s.source), is_synonym=True)
                for s in getattr(c, "synonyms", None) or ()}
    entry = ConfigEntry(c.name, c.value, source, is_read_only=c.read_only,
                        is_default=is_default, is_sensitive=c.is_sensitive,
                        synonyms=synonyms)
    if with_documentation:
        entry.documentation = getattr(c, "documentation", None)
    return entry


def _operation(entry: ConfigEntry) -> int:
    op = entry.incremental_operation
    assert op is not None  # incremental_alter_configs checked every entry before the call
    return op.value
