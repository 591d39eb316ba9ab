"""CreateAcls, DescribeAcls and DeleteAcls from version 0, as Kafka 3.x serves them.

kafka-python's specs of these APIs start at version 1 (Kafka 4 dropped version 0). Version 0 has the same
fields minus the pattern type (LITERAL then), which the specs already mark "1+", so the classes here load the
same specs with `validVersions` widened to 0-3. Defining a response class registers it in kafka-python's
response registry; kafka-python clients running in this process get their own classes back.
"""

from __future__ import annotations

import weakref

from kafka.protocol.admin import acl as _kafka_python_acl
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage


def _from_version_0(json: dict) -> dict:
    json['validVersions'] = '0-3'
    return json


class CreateAclsRequest(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


class CreateAclsResponse(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


class DescribeAclsRequest(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


class DescribeAclsResponse(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


class DeleteAclsRequest(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


class DeleteAclsResponse(ApiMessage):
    json_patch = classmethod(lambda cls, json: _from_version_0(json))


for _theirs in (_kafka_python_acl.CreateAclsResponse, _kafka_python_acl.DescribeAclsResponse,
                _kafka_python_acl.DeleteAclsResponse):
    ResponseClassRegistry.register_response_class(weakref.proxy(_theirs))
