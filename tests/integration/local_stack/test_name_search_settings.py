"""Name search under other settings of cdk.json, through the local stack: the name index off, and
enrichment on (content type, user metadata, tags). Each test runs a stack of its own, so this module
holds no module-wide stack (one process runs one stack at a time)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.test_name_search import (
    HTTP_TIMEOUT_S,
    Corpus,
    api_get,
    follow,
)

pytestmark = pytest.mark.usefixtures("module_aws_environment")


def test_without_the_name_index_a_name_list_is_a_400_and_the_rest_works() -> None:
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context={"nameIndex": False}) as stack:
        stack.wait_until_indexed()
        assert stack.describe()["nameTable"] is None
        stack.client("s3").put_object(Bucket=stack.bucket, Key="USER001_Invoice.pdf", Body=b"x")
        stack.wait_until_indexed()
        for params in ({"q": "invoice"}, {"prefix": "USER001"}, {"ext": "pdf"}, {"delimiter": "/"}):
            status, body = api_get(stack.api_url, {"bucket": stack.bucket, **params})
            assert status == 400
            assert "nameIndex is false" in body["message"]
        status, body = api_get(stack.api_url, {"bucket": stack.bucket})
        assert status == 200
        assert [item["objectKey"] for item in body["items"]] == ["USER001_Invoice.pdf"]


def test_enriched_files_are_found_by_content_type_metadata_and_tags() -> None:
    context = {"enrich": ["contentType", "metadata", "tags"], "bucketIndexShards": 4}
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context=context) as stack:
        stack.wait_until_indexed()
        s3 = stack.client("s3")
        uploads = [
            ("USER001/cat.png", "image/png", {"project": "apollo"}, "team=red"),
            ("USER001/dog.JPG", "image/jpeg", {"project": "gemini"}, "team=blue"),
            ("USER002/plan.pdf", "application/pdf", {"project": "apollo"}, "team=blue&stage=final"),
            ("USER002/notes.txt", "text/plain; charset=utf-8", {}, ""),
        ]
        for key, content_type, metadata, tagging in uploads:
            s3.put_object(
                Bucket=stack.bucket,
                Key=key,
                Body=b"x",
                ContentType=content_type,
                Metadata=metadata,
                Tagging=tagging,
            )
        stack.wait_until_indexed()
        corpus = Corpus(stack=stack)

        def keys(params: dict[str, Any]) -> list[str]:
            items, _, _ = follow(corpus, {"bucket": stack.bucket, **params})
            return sorted(item["objectKey"] for item in items)

        assert keys({"contentType": "image/*"}) == ["USER001/cat.png", "USER001/dog.JPG"]
        assert keys({"contentType": "IMAGE/PNG"}) == ["USER001/cat.png"]
        assert keys({"contentType": "text/plain"}) == ["USER002/notes.txt"]
        assert keys({"meta.project": "apollo"}) == ["USER001/cat.png", "USER002/plan.pdf"]
        assert keys({"tag.team": "blue", "tag.stage": "final"}) == ["USER002/plan.pdf"]
        assert keys({"tag.team": "blue", "limit": 1}) == ["USER001/dog.JPG", "USER002/plan.pdf"]
        assert keys({"q": "plan", "meta.project": "apollo"}) == ["USER002/plan.pdf"]
        assert keys({"ext": "jpg", "contentType": "image/*"}) == ["USER001/dog.JPG"]
        items, _, _ = follow(corpus, {"user": "USER001", "tag.team": "red"})
        assert [(item["objectKey"], item["tags"], item["contentType"]) for item in items] == [
            ("USER001/cat.png", {"team": "red"}, "image/png")
        ]
        # A tag change reaches the index through its event.
        s3.put_object_tagging(
            Bucket=stack.bucket, Key="USER001/cat.png", Tagging={"TagSet": [{"Key": "team", "Value": "blue"}]}
        )
        stack.wait_until_indexed()
        assert keys({"tag.team": "blue"}) == ["USER001/cat.png", "USER001/dog.JPG", "USER002/plan.pdf"]
        for params, message in [
            ({"contentType": "png"}, "contentType must be a media type"),
            ({"meta.": "x"}, "give a name after 'meta.'"),
        ]:
            status, body = api_get(stack.api_url, {"bucket": stack.bucket, **params})
            assert status == 400
            assert message in body["message"]
        url = f"{stack.api_url}/files?bucket={stack.bucket}&tag.team=a&tag.team=b"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S)  # noqa: S310 (local stack)
        assert refused.value.code == 400
        assert "given 2 times" in json.load(refused.value)["message"]
