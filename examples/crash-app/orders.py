#!/usr/bin/env python3
"""A small order service, to run under `shoal crash-test --app`.

Each worker thread places orders, one after another, until it is stopped. Placing an order is
one TransactWriteItems that puts the order and adds 1 to a counter of orders. When the call
fails the way an outage fails (the connection refused or cut, a 5xx, a throttle) the worker
waits a little and sends the same order again, until it is acknowledged, then appends the
order's id to the log of confirmed orders ($SHOAL_CRASH_TEST_DIR/confirmed-orders.log).

The retry is the hazard. When the database dies after it committed a write but before its
answer reached the client, the client sees a cut connection, exactly as when the write never
arrived. So the retry may apply the order a second time:

- by default the transaction is idempotent: the order's Put is conditional on the order not
  existing yet (and the call carries a ClientRequestToken). A retry of an order that was in
  fact placed is refused with ConditionalCheckFailed, which means "already placed": the
  worker counts it as confirmed, and the counter was added to once;
- with --no-idempotency the transaction has no condition and no token: a retry of an order
  that was in fact placed puts the same order again (harmless) and adds 1 to the counter
  again (not harmless). check.py then finds more orders counted than the table holds.

The environment comes from `shoal crash-test`: AWS_ENDPOINT_URL, credentials, a region.
"""

import argparse
import http.client
import os
import random
import sys
import threading
import time
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
from botocore.exceptions import HTTPClientError
from urllib3.exceptions import HTTPError as Urllib3Error

TABLE = "Orders"
COUNTER_KEY = {"pk": {"S": "counter"}}

# Error codes that mean "the service is in trouble, the write may or may not have been
# applied": retried. Anything else is a bug of this app and ends it.
RETRIED_CODES = {
    "InternalServerError",
    "ServiceUnavailable",
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "TransactionConflictException",
}


def client():
    # botocore's own retries are off so that this file shows every retry it makes; the
    # timeouts are short so that a dead server is noticed quickly.
    config = Config(
        retries={"total_max_attempts": 1},
        connect_timeout=1,
        read_timeout=5,
    )
    return boto3.client("dynamodb", config=config)


def outage(error):
    """Whether `error` is what an outage looks like (retry), not a refusal (do not)."""
    # A connection refused or cut, before or during the answer (botocore wraps most of these;
    # a body cut short can surface from urllib3 or http.client as it is).
    if isinstance(
        error,
        (BotoConnectionError, HTTPClientError, Urllib3Error, http.client.HTTPException, OSError),
    ):
        return True
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code == "TransactionCanceledException":
            # Another worker's transaction on the counter got there first: nothing applied.
            reasons = error.response.get("CancellationReasons") or []
            return any(r.get("Code") == "TransactionConflict" for r in reasons)
        return status >= 500 or code in RETRIED_CODES
    return False


def already_placed(error):
    """Whether the transaction was cancelled because the order exists: an earlier attempt
    whose answer was lost had placed it."""
    if not isinstance(error, ClientError):
        return False
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = error.response.get("CancellationReasons") or []
    return bool(reasons) and reasons[0].get("Code") == "ConditionalCheckFailed"


def create_table(dynamodb):
    while True:
        try:
            dynamodb.create_table(
                TableName=TABLE,
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            return
        except ClientError as error:
            if error.response["Error"]["Code"] == "ResourceInUseException":
                return
            if not outage(error):
                raise
        except Exception as error:  # noqa: BLE001 - only outages are retried
            if not outage(error):
                raise
        time.sleep(0.1)


def place(dynamodb, order_id, amount, idempotent):
    """Places one order, retrying through outages; returns the retries it took."""
    order = {
        "Put": {
            "TableName": TABLE,
            "Item": {"pk": {"S": "order#" + order_id}, "amount": {"N": str(amount)}},
        }
    }
    count = {
        "Update": {
            "TableName": TABLE,
            "Key": COUNTER_KEY,
            "UpdateExpression": "ADD orders :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }
    request = {"TransactItems": [order, count]}
    if idempotent:
        order["Put"]["ConditionExpression"] = "attribute_not_exists(pk)"
        # The token makes a retry within 10 minutes a no-op on DynamoDB. Shoal remembers
        # tokens in memory, so after a restart the condition is what stops the second Put.
        request["ClientRequestToken"] = order_id
    retries = 0
    pause = 0.05
    while True:
        try:
            dynamodb.transact_write_items(**request)
            return retries
        except Exception as error:  # noqa: BLE001 - sorted below
            if idempotent and already_placed(error):
                return retries
            if not outage(error):
                raise
        retries += 1
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def worker(args, log, stop, failures):
    dynamodb = client()
    rng = random.Random()
    try:
        while not stop.is_set():
            order_id = str(uuid.uuid4())
            retries = place(dynamodb, order_id, rng.randint(1, 500), not args.no_idempotency)
            # One write() of one line: lines of several threads never interleave.
            os.write(log, (order_id + "\n").encode())
            if retries:
                print(f"order {order_id} confirmed after {retries} retries", file=sys.stderr)
    except Exception as error:  # noqa: BLE001 - reported, and the app exits non-zero
        failures.append(repr(error))
        stop.set()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4, help="orders placed at once")
    parser.add_argument(
        "--no-idempotency",
        action="store_true",
        help="place orders without the condition and the token (the bug check.py finds)",
    )
    args = parser.parse_args()
    directory = os.environ.get("SHOAL_CRASH_TEST_DIR", ".")
    log = os.open(
        os.path.join(directory, "confirmed-orders.log"),
        os.O_WRONLY | os.O_APPEND | os.O_CREAT,
        0o644,
    )
    create_table(client())
    stop = threading.Event()
    failures = []
    threads = [
        threading.Thread(target=worker, args=(args, log, stop, failures), daemon=True)
        for _ in range(args.workers)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        stop.set()
    if failures:
        print("orders.py: " + failures[0], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
