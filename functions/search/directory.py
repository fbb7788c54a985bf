"""People's names from the user pool, for admins' lists that mix people's files: never a raw `sub`.

A file's uploadUser is the value of the deployment's user claim (`userClaim`): `sub` (Cognito's ListUsers
finds the person with a `sub = "..."` filter), `cognito:username` (AdminGetUser), or an admin-set
`custom:` attribute, which ListUsers cannot filter on (its value, set by an administrator, is shown as it
is). The name shown is the attribute `ownerNameAttribute` chooses: `name`, `email` or `username`; a person
without that attribute is shown by their user name, a person no longer in the pool as "unknown person".

Names are cached per execution environment, at most NAME_CACHE_SIZE of them (least recently used out);
a list page asks the pool once per person not cached (ListUsers allows 30 requests a second per account:
an admin's page of 100 people's files costs up to 100 requests the first time, none after).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

NAME_ATTRIBUTES = ("name", "email", "username")
DEFAULT_NAME_ATTRIBUTE = "name"
NAME_CACHE_SIZE = 2000
UNKNOWN_PERSON = "unknown person"
# The people `GET /me/people?q=` answers at most.
MAX_PEOPLE = 20
# What a ListUsers filter value may hold here: no quote or backslash, which would end or escape it.
_FILTER_VALUE = re.compile(r'[^"\\]{1,256}')

CognitoClient = Any


class PeopleDirectory:
    """Names of the people of one user pool (`pool_id`), whose files are keyed by `user_claim`."""

    def __init__(self, cognito: CognitoClient, *, pool_id: str, user_claim: str, name_attribute: str) -> None:
        self._cognito = cognito
        self._pool_id = pool_id
        self._user_claim = user_claim
        self._name_attribute = name_attribute
        self._names: OrderedDict[str, str] = OrderedDict()

    def names(self, users: Iterable[str]) -> dict[str, str]:
        """The name of each of `users` (uploadUser values), from the cache or the pool."""
        return {user: self.name(user) for user in dict.fromkeys(users)}

    def name(self, user: str) -> str:
        if user in self._names:
            self._names.move_to_end(user)
            return self._names[user]
        name = self._look_up(user)
        self._remember(user, name)
        return name

    def _remember(self, user: str, name: str) -> None:
        self._names[user] = name
        self._names.move_to_end(user)
        while len(self._names) > NAME_CACHE_SIZE:
            self._names.popitem(last=False)

    def search(self, words: str) -> list[dict[str, str]]:
        """People whose name attribute starts with `words` (Cognito's prefix filter, case-sensitive as
        Cognito's is), as `{"user": uploadUser, "name"}`, at most MAX_PEOPLE."""
        if not _FILTER_VALUE.fullmatch(words):
            return []
        attribute = "username" if self._name_attribute == "username" else self._name_attribute
        answer = self._cognito.list_users(
            UserPoolId=self._pool_id, Filter=f'{attribute} ^= "{words}"', Limit=MAX_PEOPLE
        )
        found = []
        for user in answer.get("Users", []):
            value = self._claim_of(user)
            if value is not None:
                name = self._name_of(user)
                self._remember(value, name)
                found.append({"user": value, "name": name})
        return found

    def _look_up(self, user: str) -> str:
        if self._user_claim == "cognito:username":
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
