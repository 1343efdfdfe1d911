"""The one check every git ref passes before perfdash stores it or hands it to git or pip.

A ref comes from strangers: a run request, a bisect's good and bad, the `commit` of a
metrics push that a regression verdict would bisect. It is only text here: whether it
names a commit an admin allowed is for the runner to say on its mirror of the repository
(`workers.bench.refs`). This check keeps the text one that git reads as a revision and
never as an option or a range: no leading '-', no spaces, no '..', no '@{' reflog.

Public surface: `GIT_REF`, `BRANCH_PATTERN`, `check_ref`, `check_branch_pattern`.
"""

import re

# A revision as `git rev-parse` takes it: a name, a hash, `name~2`, `name^`.
GIT_REF = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_./~^-]{0,255}$")
# A branch name or an fnmatch pattern of them (`main`, `release/*`).
BRANCH_PATTERN = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_*?][A-Za-z0-9_./*?-]{0,255}$")


def check_ref(value: str) -> str:
    """`value` if git reads it as one revision, else ValueError saying what is allowed.

    >>> check_ref("refs/pull/1/head")
    'refs/pull/1/head'
    >>> check_ref("--upload-pack=touch /tmp/x")
    Traceback (most recent call last):
    ...
    ValueError: a git ref: letters, digits, '_', '.', '/', '~', '^', '-'; no '..'; not '-' first
    """
    if not GIT_REF.match(value):
        raise ValueError(
            "a git ref: letters, digits, '_', '.', '/', '~', '^', '-'; no '..'; not '-' first"
        )
    return value


def check_branch_pattern(value: str) -> str:
    """`value` if it is a branch name or an fnmatch pattern of branch names, else ValueError.

    >>> check_branch_pattern("release/*")
    'release/*'
    """
    if not BRANCH_PATTERN.match(value):
        raise ValueError(
            f"{value!r} is not a branch pattern: letters, digits, '_', '.', '/', '-', "
            "and the wildcards '*' and '?'"
        )
    return value
