"""People's names from the user pool, for admins' lists that mix people's files: never a raw `sub`.

A file's uploadUser is the value of the deployment's user claim (`userClaim`): `sub` (Cognito's ListUsers
finds the person with a `sub = "..."` filter), `cognito:username` (AdminGetUser), or an admin-set
`custom:` attribute, which ListUsers cannot filter on (its value, set by an administrator, is shown as it
is). The name shown is the attribute `ownerNameAttribute` chooses: `name`, `email` or `username`; a person
without that attribute is shown by their user name, a person no longer in the pool as "unknown person".

Names are cached per execution environment, at most NAME_CACHE_SIZE of them (least recently used out).
A list page asks the pool for at most LOOKUPS_PER_PAGE people not cached, LOOKUP_THREADS at a time, and
waits at most LOOKUP_SECONDS for them (ListUsers allows 30 requests a second per account, and a page may
hold 1,000 people): a person not named in time, or whom the pool did not answer (throttled, failing), is
shown by their user value, and a later page names them (a lookup that ends after its page is kept).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

NAME_ATTRIBUTES = ("name", "email", "username")
DEFAULT_NAME_ATTRIBUTE = "name"
NAME_CACHE_SIZE = 2000
UNKNOWN_PERSON = "unknown person"
# The people `GET /me/people?q=` answers at most.
MAX_PEOPLE = 20
# What a ListUsers filter value may hold here: no quote or backslash, which would end or escape it.
_FILTER_VALUE = re.compile(r'[^"\\]{1,256}')
# People not cached that one list page asks the pool for, how many at once, and how long it waits.
LOOKUPS_PER_PAGE = 25
LOOKUP_THREADS = 8
LOOKUP_SECONDS = 2.0
# A user name AdminGetUser takes: 1 to 128 letters, marks, symbols, numbers or punctuation.
MAX_USERNAME_LENGTH = 128
_USERNAME_CATEGORIES = frozenset("LMSNP")

logger = Logger(child=True)

CognitoClient = Any


class PeopleDirectory:
    """Names of the people of one user pool (`pool_id`), whose files are keyed by `user_claim`."""

    def __init__(self, cognito: CognitoClient, *, pool_id: str, user_claim: str, name_attribute: str) -> None:
        self._cognito = cognito
        self._pool_id = pool_id
        self._user_claim = user_claim
        self._name_attribute = name_attribute
        self._names: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        # Lookups asked and not yet answered, by user: a page never asks twice for one person.
        self._pending: dict[str, Future[str]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def names(self, users: Iterable[str]) -> dict[str, str]:
        """The name of each of `users` (uploadUser values), from the cache or the pool, within the bounds
        of one page (LOOKUPS_PER_PAGE, LOOKUP_SECONDS): a person not named is shown by their user value."""
        wanted = list(dict.fromkeys(users))
        named = {user: name for user in wanted if (name := self._cached(user)) is not None}
        futures: dict[str, Future[str]] = {}
        for user in wanted:
            if user in named:
                continue
            future = self._ask(user) if len(futures) < LOOKUPS_PER_PAGE else None
            if future is None:
                break
            futures[user] = future
        if futures:
            wait(futures.values(), timeout=LOOKUP_SECONDS)
        unnamed = 0
        for user in wanted:
            if user in named:
                continue
            future = futures.get(user)
            if future is not None and future.done() and future.exception() is None:
                named[user] = future.result()
            else:
                named[user] = user
                unnamed += 1
        if unnamed:
            logger.info("owners not named on this page", extra={"unnamed": unnamed, "owners": len(wanted)})
        return named

    def name(self, user: str) -> str:
        """The name of one person, asked of the pool if not cached (no bound: one lookup)."""
        cached = self._cached(user)
        if cached is not None:
            return cached
        name = self._look_up(user)
        self._remember(user, name)
        return name

    def _cached(self, user: str) -> str | None:
        """`user`'s name if cached (now the most recently used), else None."""
        with self._lock:
            if user not in self._names:
                return None
            self._names.move_to_end(user)
            return self._names[user]

    def _ask(self, user: str) -> Future[str] | None:
        """A lookup of `user` started (or already running); None once LOOKUPS_PER_PAGE are running."""
        with self._lock:
            if user in self._pending:
                return self._pending[user]
            if len(self._pending) >= LOOKUPS_PER_PAGE:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="people")
            future = self._executor.submit(self._look_up_and_remember, user)
            self._pending[user] = future
            return future

    def _look_up_and_remember(self, user: str) -> str:
        try:
            name = self._look_up(user)
        except (ClientError, BotoCoreError) as error:
            # Throttled or failing: this page shows the user value, and a later one asks again.
            code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
            logger.warning(
                "owner not named: the user pool did not answer", extra={"code": code or str(error)}
            )
            raise
        finally:
            with self._lock:
                self._pending.pop(user, None)
        self._remember(user, name)
        return name

    def _remember(self, user: str, name: str) -> None:
        with self._lock:
            self._names[user] = name
            self._names.move_to_end(user)
            while len(self._names) > NAME_CACHE_SIZE:
                self._names.popitem(last=False)

    def search(self, words: str) -> list[dict[str, str]]:
        """People whose name as the lists show it starts with `words` (Cognito's prefix filter,
        case-sensitive as Cognito's is), as `{"user": uploadUser, "name"}`, at most MAX_PEOPLE.

        The name shown is the name attribute, or the user name of a person without it (`_name_of`): so
        a person is found by either, as the Owner column shows them (two ListUsers at most)."""
        if not _FILTER_VALUE.fullmatch(words):
            return []
        found: dict[str, str] = {}
        for attribute in dict.fromkeys((self._name_attribute, "username")):
            if len(found) == MAX_PEOPLE:
                break
            answer = self._cognito.list_users(
                UserPoolId=self._pool_id, Filter=f'{attribute} ^= "{words}"', Limit=MAX_PEOPLE
            )
            for user in answer.get("Users", []):
                value, name = self._claim_of(user), self._name_of(user)
                # By user name: only those the lists show by it (no name attribute of their own).
                if value is None or not name.startswith(words) or len(found) == MAX_PEOPLE:
                    continue
                self._remember(value, name)
                found.setdefault(value, name)
        return [{"user": value, "name": name} for value, name in found.items()]

    def _look_up(self, user: str) -> str:
        if self._user_claim == "cognito:username":
            if not is_username(user):
                return UNKNOWN_PERSON  # AdminGetUser refuses it: nobody of the pool has it
            try:
                answer = self._cognito.admin_get_user(UserPoolId=self._pool_id, Username=user)
            except self._cognito.exceptions.UserNotFoundException:
                return UNKNOWN_PERSON
            return self._name_of(
                {"Username": answer["Username"], "Attributes": answer.get("UserAttributes", [])}
            )
        if self._user_claim != "sub":
            return user  # an administrator's own value (custom:NAME): no filter can find it
        if not _FILTER_VALUE.fullmatch(user):
            return UNKNOWN_PERSON
        users = self._cognito.list_users(UserPoolId=self._pool_id, Filter=f'sub = "{user}"', Limit=1)["Users"]
        return self._name_of(users[0]) if users else UNKNOWN_PERSON

    def _name_of(self, user: dict[str, Any]) -> str:
        username = str(user.get("Username", "")) or UNKNOWN_PERSON
        if self._name_attribute == "username":
            return username
        attributes = {item["Name"]: item.get("Value", "") for item in user.get("Attributes", [])}
        return attributes.get(self._name_attribute) or username

    def _claim_of(self, user: dict[str, Any]) -> str | None:
        if self._user_claim == "cognito:username":
            return str(user.get("Username"))
        attributes = {item["Name"]: item.get("Value", "") for item in user.get("Attributes", [])}
        return attributes.get(self._user_claim)


def is_username(value: str) -> bool:
    """Whether `value` is a user name Cognito could have given (AdminGetUser refuses any other)."""
    return 0 < len(value) <= MAX_USERNAME_LENGTH and all(
        unicodedata.category(character)[0] in _USERNAME_CATEGORIES for character in value
    )
