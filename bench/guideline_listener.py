"""A faithful port of the guideline's event listener (section 5.4.4.2.5, `S3NoticeMessageListener`).

The design we improve on, in Python and boto3, call for call as the Java DynamoDBMapper issues them:

1. a strongly consistent GetItem of the key (`dbMapper.load(..., CONSISTENT)`);
2. no item: a Created event is written with an unconditional PutItem (`SaveBehavior.CLOBBER`, version 1);
   a Removed event is dropped (the guideline's create path ignores it, which is how it loses a delete
   that overtakes its create);
3. an item: the event's sequencer is compared with the stored one after right-padding the shorter with
   zeros (`isNewEntry`); an older or equal event stops here;
4. a newer Created event is an UpdateItem, a newer Removed event a DeleteItem, both conditional on the
   version number read in step 1 (`@DynamoDBVersionAttribute`, optimistic locking);
5. a version conflict (`ConditionalCheckFailedException`) re-reads consistently and starts again at 3.

The guideline runs this listener with `concurrency = "1"` so the read-compare-write cannot interleave;
`process` does the same. Two details differ from the Java text, neither changing the number of calls:
keys are URL-decoded (the Java reads `getKey()`, still encoded), so both indexes hold the same keys; and
when the re-read after a conflict finds no item, this port takes the create path where the Java would
throw a NullPointerException.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from file_index.rules import schema

VERSION = "version"  # the guideline's @DynamoDBVersionAttribute
EV_CREATED = "ObjectCreated"
EV_REMOVED = "ObjectRemoved"


def is_new_entry(current: str, new: str) -> bool:
    """The guideline's `isNewEntry`: right-pad the shorter sequencer with zeros, then compare."""
    width = max(len(current), len(new))
    return new.ljust(width, "0") > current.ljust(width, "0")


def data_split(object_key: str) -> tuple[str, str]:
    """The guideline's `dataSplit`: user and file name; the user ends at the first `_` or `/`."""
    for index, char in enumerate(object_key):
        if char in "_/":
            return object_key[:index], object_key[index + 1 :]
    return "", object_key


class GuidelineListener:
    """`S3NoticeMessageListener` over a boto3 `Table` resource; `receive` takes one SQS message body."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def process(self, bodies: Iterable[str]) -> None:
        """The listener with concurrency 1: one message after the other."""
        for body in bodies:
            self.receive(body)

    def receive(self, body: str) -> None:
        record = json.loads(body)["Records"][0]
        current = self._load(self._key(record))
        if current is None:
            self._create_record(record)
        else:
            self._update_record(current, record)

    @staticmethod
    def _key(record: dict[str, Any]) -> str:
        return unquote_plus(record["s3"]["object"]["key"])

    def _load(self, object_key: str) -> dict[str, Any] | None:
        response = self.table.get_item(Key={schema.OBJECT_KEY: object_key}, ConsistentRead=True)
        item: dict[str, Any] | None = response.get("Item")
        return item

    @staticmethod
    def _attributes(record: dict[str, Any]) -> dict[str, Any]:
        object_key = unquote_plus(record["s3"]["object"]["key"])
        user, file_name = data_split(object_key)
        return {
            schema.BUCKET_NAME: record["s3"]["bucket"]["name"],
            schema.FILE_ID: file_name,
            schema.SIZE: int(record["s3"]["object"].get("size", 0)),
            schema.UPLOAD_USER: user,
            # The guideline stores the day only; the time is kept here so both indexes can be compared.
            schema.UPLOAD_DATE: record["eventTime"],
            schema.SEQUENCER: record["s3"]["object"]["sequencer"],
        }

    def _create_record(self, record: dict[str, Any]) -> None:
        if EV_CREATED in record["eventName"]:
            item = {schema.OBJECT_KEY: self._key(record), **self._attributes(record), VERSION: 1}
            self.table.put_item(Item=item)  # CLOBBER: no condition, no version check

    def _update_record(self, current: dict[str, Any], record: dict[str, Any]) -> None:
        if not is_new_entry(str(current[schema.SEQUENCER]), record["s3"]["object"]["sequencer"]):
            return
        key = {schema.OBJECT_KEY: self._key(record)}
        version = int(current[VERSION])
        try:
            if EV_CREATED in record["eventName"]:
                attributes = {**self._attributes(record), VERSION: version + 1}
                names = {f"#a{i}": name for i, name in enumerate(attributes)}
                values = {f":v{i}": value for i, value in enumerate(attributes.values())}
                self.table.update_item(
                    Key=key,
                    UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attributes))),
                    ConditionExpression=Attr(VERSION).eq(version),
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
            elif EV_REMOVED in record["eventName"]:
                self.table.delete_item(Key=key, ConditionExpression=Attr(VERSION).eq(version))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            reloaded = self._load(key[schema.OBJECT_KEY])
            if reloaded is None:
                self._create_record(record)
            else:
                self._update_record(reloaded, record)
