"""AWS Signature Version 4 for the few S3 requests storbench makes itself (bucket check, bucket creation, listing
and deleting its own objects). Pure: a request in, its headers out. fio's http engine signs the measured
requests itself.

Why not boto3: botocore pins python-dateutil below 3 while the kubernetes client needs 3 or later, and pip spent
seven minutes backtracking between them; four requests do not justify that.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class S3Credentials:
    access_key: str
    secret_key: str

    def __repr__(self) -> str:  # never printed, logged or stored
        return "S3Credentials(<hidden>)"


def _sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def canonical_query(query: dict[str, str]) -> str:
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items()))


def signed_headers(method: str, host: str, path: str, query: dict[str, str], payload_sha256: str,
                   credentials: S3Credentials, region: str, now: datetime) -> dict[str, str]:
    """The headers that authenticate one request (``path`` already URL-encoded, ``now`` in UTC)."""
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {"host": host, "x-amz-content-sha256": payload_sha256, "x-amz-date": amz_date}
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, path, canonical_query(query),
                           "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), names, payload_sha256])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _sign(_sign(_sign(_sign(f"AWS4{credentials.secret_key}".encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {**headers, "authorization": f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={names}, Signature={signature}"}
