"""Add a person to the local stack's user pool, with a password they sign in with at once.

moto sends no mail, so the README's `admin-create-user` leaves a person of the local pool with a temporary
password nobody learns (FORCE_CHANGE_PASSWORD). This makes the person with a permanent password instead,
printed once, and adds them to the admin group if asked:

    .venv/bin/python -m local_stack.people --aws-endpoint http://127.0.0.1:5000 alice --name "Alice Archer"
    .venv/bin/python -m local_stack.people --aws-endpoint http://127.0.0.1:5000 bob --admin

`--aws-endpoint` is the `awsEndpoint` of `make serve`'s READY line (fixed with `AWS_PORT=5000 make serve`);
the pool is the one the stack made (the only pool there). Exit status 0 on success, 1 with one line saying
why otherwise (no stack there, a name taken, a password the pool refuses).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from local_stack.cognito import POOL_NAME, generated_password
from search.people import DEFAULT_ADMIN_GROUP

EXIT_OK = 0
EXIT_FAILED = 1


class PeopleError(Exception):
    """Why the person could not be added, in one line."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local_stack.people",
        description="Add a person to the local stack's user pool, with a password to sign in with at once.",
    )
    parser.add_argument("username", help="the person's user name (what they type to sign in)")
    parser.add_argument(
        "--aws-endpoint",
        required=True,
        help="the local stack's AWS endpoint: awsEndpoint of make serve's READY line",
    )
    parser.add_argument("--name", help="their name, as admins' lists show it (the pool's name attribute)")
    parser.add_argument("--email", help="their e-mail address (default: USERNAME@example.com)")
    parser.add_argument("--password", help="their password (default: a new one, printed)")
    parser.add_argument("--admin", action="store_true", help=f"add them to the {DEFAULT_ADMIN_GROUP} group")
    parser.add_argument("--admin-group", default=DEFAULT_ADMIN_GROUP, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def local_pool(cognito: Any) -> str:
    """The id of the local stack's pool (`local_stack.cognito.POOL_NAME`): the only one of that name."""
    pools = [
        pool for pool in cognito.list_user_pools(MaxResults=60)["UserPools"] if pool.get("Name") == POOL_NAME
    ]
    if len(pools) != 1:
        raise PeopleError(
            f"expected the local stack's one pool {POOL_NAME!r} at that endpoint, found {len(pools)}"
        )
    return str(pools[0]["Id"])


def add_person(cognito: Any, args: argparse.Namespace) -> str:
    """Make the person with a permanent password; the password."""
    pool_id = local_pool(cognito)
    password = args.password or generated_password()
    attributes = {"email": args.email or f"{args.username}@example.com", "email_verified": "true"}
    if args.name:
        attributes["name"] = args.name
    try:
        cognito.admin_create_user(
            UserPoolId=pool_id,
            Username=args.username,
            MessageAction="SUPPRESS",
            UserAttributes=[{"Name": name, "Value": value} for name, value in attributes.items()],
        )
    except cognito.exceptions.UsernameExistsException:
        raise PeopleError(f"the pool already has a person named {args.username!r}") from None
    try:
        cognito.admin_set_user_password(
            UserPoolId=pool_id, Username=args.username, Password=password, Permanent=True
        )
    except cognito.exceptions.InvalidPasswordException as error:
        cognito.admin_delete_user(UserPoolId=pool_id, Username=args.username)  # nothing half made
        raise PeopleError(f"the pool refuses that password: {error.response['Error']['Message']}") from None
    if args.admin:
        cognito.admin_add_user_to_group(
            UserPoolId=pool_id, Username=args.username, GroupName=args.admin_group
        )
    return password


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # The local stack's moto takes any credentials; these never reach AWS.
    cognito = boto3.client(
        "cognito-idp",
        endpoint_url=args.aws_endpoint,
        region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106 (moto's, not a secret)
    )
    try:
        password = add_person(cognito, args)
    except PeopleError as error:
        print(f"local_stack.people: {error}", file=sys.stderr)
        return EXIT_FAILED
    except (ClientError, BotoCoreError) as error:
        print(f"local_stack.people: no local stack answered at {args.aws_endpoint}: {error}", file=sys.stderr)
        return EXIT_FAILED
    role = f", in the {args.admin_group} group" if args.admin else ""
    print(f"{args.username} signs in with password {password}{role}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
