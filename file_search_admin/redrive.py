"""`redrive`: move dead-lettered messages back to the queue the indexer reads.

Safe because every index write is conditional: a message applied twice changes nothing the second time.
Each message is deleted from the dead-letter queue only after its send succeeded; a message whose send
failed stays there (it becomes visible again after the visibility timeout) and is counted as failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from file_search_admin.aws import Client
from file_search_admin.errors import AdminError

# Long enough that a message being moved is not received twice by this run.
VISIBILITY_TIMEOUT_S = 120
# SQS's batch limit.
BATCH = 10


@dataclass
class RedriveSummary:
    dlq_url: str
    queue_url: str
    moved: int = 0
    failed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "command": "redrive",
            "deadLetterQueueUrl": self.dlq_url,
            "queueUrl": self.queue_url,
            "moved": self.moved,
            "failed": self.failed,
        }


def redrive(sqs: Client, *, dlq_url: str, queue_url: str, wait_seconds: int = 1) -> RedriveSummary:
    """Receive from the dead-letter queue, send to the queue, delete what was sent, until it is empty."""
    if dlq_url.rstrip("/") == queue_url.rstrip("/"):
        raise AdminError("--dlq-url and --queue-url name the same queue")
    summary = RedriveSummary(dlq_url, queue_url)
    while True:
        messages = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=BATCH,
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=VISIBILITY_TIMEOUT_S,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return summary
        entries = []
        for position, message in enumerate(messages):
            entry: dict[str, Any] = {"Id": str(position), "MessageBody": message["Body"]}
            if message.get("MessageAttributes"):
                entry["MessageAttributes"] = message["MessageAttributes"]
            entries.append(entry)
        sent = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        succeeded = [int(result["Id"]) for result in sent.get("Successful", [])]
        summary.failed += len(sent.get("Failed", []))
        if succeeded:
            sqs.delete_message_batch(
                QueueUrl=dlq_url,
                Entries=[
                    {"Id": str(position), "ReceiptHandle": messages[position]["ReceiptHandle"]}
                    for position in succeeded
                ],
            )
            summary.moved += len(succeeded)
