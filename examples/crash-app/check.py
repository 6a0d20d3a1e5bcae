#!/usr/bin/env python3
"""The invariants of orders.py, checked by `shoal crash-test --check` after each recovery.

- every order the app logged as confirmed is in the table: an acknowledged order survived
  the crash;
- the counter of orders equals the number of orders in the table: each order was counted
  exactly once, even when its transaction was retried after a crash that had cut its answer.

Exits 0 when both hold, 1 (saying what differs) when one does not. The app is paused while
the check runs, so nothing moves between the reads.
"""

import os
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

TABLE = "Orders"


def main():
    dynamodb = boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 3}))
    orders = set()
    counter = None
    request = {"TableName": TABLE, "ConsistentRead": True}
    try:
        while True:
            page = dynamodb.scan(**request)
            for item in page["Items"]:
                key = item["pk"]["S"]
                if key == "counter":
                    counter = int(item["orders"]["N"])
                elif key.startswith("order#"):
                    orders.add(key[len("order#"):])
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            print("no orders yet: the app has not created its table")
            return 0
        raise
    directory = os.environ.get("SHOAL_CRASH_TEST_DIR", ".")
    try:
        with open(os.path.join(directory, "confirmed-orders.log")) as log:
            confirmed = [line.strip() for line in log if line.strip()]
    except FileNotFoundError:
        confirmed = []
    failed = False
    lost = [order for order in confirmed if order not in orders]
    if lost:
        failed = True
        print(f"{len(lost)} confirmed order(s) missing from the table, e.g. {lost[0]}")
    counted = counter or 0
    if counted != len(orders):
        failed = True
        print(
            f"the counter says {counted} orders but the table holds {len(orders)}: "
            f"{counted - len(orders)} order(s) counted twice (a retry re-applied a write "
            "that had been applied before the crash)"
        )
    if not failed:
        print(f"ok: {len(orders)} orders, counted once each; {len(confirmed)} confirmed, all present")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
