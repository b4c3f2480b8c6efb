"""A write to a local file acts on a path someone named (issue 54, §2.8): a path made up from a description ("the Q2
report" → ``…/reports/Q2-report``) is refused like a number nobody gave, so the loop lists the folder first; a
one-line "No matches found" is a lookup that found nothing."""

from __future__ import annotations

from nexus_agent.agent.claims import claims_change
from nexus_agent.agent.grounding import unnamed_paths
from nexus_agent.agent.history import carries_nothing, finds_nothing
from nexus_agent.agent.policy import Refuse, Run, decide
from nexus_agent.registry import Tool


def _tool(server: str, name: str, description: str, **props: str) -> Tool:
    """A tool whose every parameter (name → JSON type) is required."""
    properties = {
        k: {"type": t} if t != "array" else {"type": t, "items": {"type": "string"}} for k, t in props.items()
    }
    return Tool(server, name, description, {"type": "object", "properties": properties, "required": list(props)})


MOVE = _tool("filesystem", "move_file", "Move or rename files and directories.", source="string", destination="string")
WRITE = _tool(
    "filesystem",
    "write_file",
    "Create a new file or completely overwrite an existing file.",
    path="string",
    content="string",
)
GIT_ADD = _tool("git", "git_add", "Adds file contents to the staging area", repo_path="string", files="array")
COMMENT = _tool(
    "github",
    "create_or_update_file",
    "Create or update a single file in a GitHub repository",
    owner="string",
    path="string",
)
LISTING = "[DIR] old\n[FILE] q2-2026.csv\n[FILE] q3-2026.csv"


def test_a_path_made_up_from_a_description_is_not_named() -> None:
    request = "move the Q2 report from /home/u/reports into /home/u/archive"
    made_up = {"source": "/home/u/reports/Q2-report", "destination": "/home/u/archive/Q2-report"}
    assert set(unnamed_paths(MOVE, made_up, request)) == {"source", "destination"}
    # once a listing of the folder returned it, the file is named
    listed = {"source": "/home/u/reports/q2-2026.csv", "destination": "/home/u/archive/q2-2026.csv"}
    assert unnamed_paths(MOVE, listed, request, (), [LISTING]) == {}
    assert unnamed_paths(MOVE, listed, request) != {}


def test_a_path_the_request_spells_is_named() -> None:
    request = "Rename /home/u/notes/ideas.txt to ideas-2026.txt in the same folder."
    args = {"source": "/home/u/notes/ideas.txt", "destination": "/home/u/notes/ideas-2026.txt"}
    assert unnamed_paths(MOVE, args, request) == {}
    # the rename's target written as its source too: a move onto itself moves nothing it was asked to
    same = {"source": "/home/u/notes/ideas-2026.txt", "destination": "/home/u/notes/ideas-2026.txt"}
    assert unnamed_paths(MOVE, same, request) == {"source": "/home/u/notes/ideas-2026.txt"}


def test_a_file_named_in_words_is_not_its_file_name() -> None:
    # "tax return PDF" names no tax-return.pdf; "usage docs page" no usage_docs.md
    args = {"source": "/h/drafts/tax-return.pdf", "destination": "/h/archive/tax-return.pdf"}
    assert unnamed_paths(MOVE, args, "Move the tax return PDF in /h/drafts to /h/archive.")
    staged = {"repo_path": "/h/repo", "files": ["usage_docs.md"]}
    assert unnamed_paths(GIT_ADD, staged, "stage the untracked usage docs page in /h/repo") == {
        "files": ["usage_docs.md"]
    }
    # a status line that lists it names it
    status = "Untracked files:\n\tdocs/usage.md\n"
    assert (
        unnamed_paths(
            GIT_ADD, {"repo_path": "/h/repo", "files": ["docs/usage.md"]}, "stage it in /h/repo", (), [status]
        )
        == {}
    )


def test_tools_that_create_and_remote_tools_are_not_checked() -> None:
    # a new file's path is new: write_file says it creates
    assert unnamed_paths(WRITE, {"path": "/h/notes/new.txt", "content": "x"}, "save a note in /h/notes") == {}
    # ... when the request asks for something new: "update it" asks to change a file that is there
    risotto = "My risotto recipe in /h/recipes needs twice the rice, update it."
    made = {"path": "/h/recipes/risotto.txt", "content": "twice the rice"}
    assert unnamed_paths(WRITE, made, risotto, (), ["[FILE] pancakes.txt"]) == {"path": "/h/recipes/risotto.txt"}
    assert unnamed_paths(WRITE, made, risotto, (), ["[FILE] risotto.txt"]) == {}
    # no absolute path: a remote API's path (a repository's README.md) is not a local file
    assert unnamed_paths(COMMENT, {"owner": "acme", "path": "README.md"}, "add a section to the README") == {}


def test_the_policy_refuses_a_made_up_path_before_it_runs() -> None:
    request = "move the Q2 report from /home/u/reports into /home/u/archive"
    made_up = {"source": "/home/u/reports/Q2-report", "destination": "/home/u/archive/Q2-report"}
    decision = decide(MOVE, {"readOnlyHint": False}, made_up, request, [], auto_yes=True)
    assert isinstance(decision, Refuse) and "source" in decision.reason
    # the written answer quotes the refusal: its "(the model wrote …)" is no claim of a change (the check run of
    # this session counted two until it was worded so)
    assert not claims_change(f"Nothing was changed: move_file was not run: {decision.reason}.")
    listed = {"source": "/home/u/reports/q2-2026.csv", "destination": "/home/u/archive/q2-2026.csv"}
    assert isinstance(decide(MOVE, {"readOnlyHint": False}, listed, request, [], True, [LISTING]), Run)


def test_a_one_line_no_matches_is_a_lookup_that_found_nothing() -> None:
    for text in ("No matches found", "no results", "Nothing found.", "No issues found"):
        assert finds_nothing(text), text
        assert not carries_nothing(text), text  # the answer's templates still read it as data
    for text in ("No matches found in a.txt\n[FILE] b.txt", "found 2 files", "[FILE] a.txt"):
        assert not finds_nothing(text), text


def test_the_folder_the_request_finds_its_object_in_is_not_the_object() -> None:
    request = "Create a folder /h/archive/2026-q2 and move the Q2 report from /h/reports into it."
    whole = {"source": "/h/reports", "destination": "/h/archive/2026-q2/reports"}
    assert unnamed_paths(MOVE, whole, request) == {"source": "/h/reports"}
    # a folder the request asks to move is moved
    folder = {"source": "/h/trips/lisbon", "destination": "/h/notes/lisbon"}
    assert unnamed_paths(MOVE, folder, "move the whole /h/trips/lisbon folder to /h/notes/lisbon") == {}
    # a file the request names with "in" is the object itself
    edit = _tool("fs", "edit_file", "Make line-based edits to a text file.", path="string")
    assert unnamed_paths(edit, {"path": "/h/notes/todo.md"}, "tick it off in /h/notes/todo.md") == {}


def test_a_name_pattern_that_found_nothing_is_searched_as_part_of_a_name() -> None:
    from nexus_agent.agent.turn import broadened

    search = _tool(
        "filesystem",
        "search_files",
        "Recursively search for files matching a glob pattern.",
        path="string",
        pattern="string",
    )
    assert broadened(search, {"path": "/h", "pattern": "README"}) == {"path": "/h", "pattern": "**/*README*"}
    assert broadened(search, {"path": "/h", "pattern": "**/packing*"}) is None  # a glob already: searched as asked


STATUS = "On branch main\nChanges not staged for commit:\n\tmodified:   src/calc.py\n\nUntracked files:\n\tnotes.txt"


def test_a_found_file_must_be_the_one_described() -> None:
    # no test file is modified: the one modified file the status found is not "the modified test files"
    request = "stage the modified test files in /home/u/repo"
    args = {"repo_path": "/home/u/repo", "files": ["src/calc.py"]}
    assert unnamed_paths(GIT_ADD, args, request, (), [STATUS]) == {"files": ["src/calc.py"]}
    status = STATUS.replace("src/calc.py", "tests/test_calc.py")
    fine = {"repo_path": "/home/u/repo", "files": ["tests/test_calc.py"]}
    assert unnamed_paths(GIT_ADD, fine, request, (), [status]) == {}
    # a file described by its state alone is any file in that state
    plain = "stage the modified file in /home/u/repo"
    assert unnamed_paths(GIT_ADD, args, plain, (), [STATUS]) == {}
    # a listing's file is not held to the request's words: "the third-quarter report" is q3-2026.csv (measured on
    # the check split: refused when it was)
    move = "Rename the third-quarter report under /home/u/reports to revenue-q3.csv"
    found = {"source": "/home/u/reports/q3-2026.csv", "destination": "/home/u/reports/revenue-q3.csv"}
    assert unnamed_paths(MOVE, found, move, (), [LISTING]) == {}


def test_a_missing_object_is_said_in_words() -> None:
    from nexus_agent.agent.turn import _error_line, _failure

    error = (
        "Error executing tool git_add: Cmd('git') failed due to: exit code(128)\n  cmdline: git add -- src/x.py\n"
        "  stderr: 'fatal: pathspec 'src/x.py' did not match any files'"
    )
    assert _error_line(error) == "fatal: pathspec 'src/x.py' did not match any files"

    class _S:
        tool = GIT_ADD
        text = error

    said = _failure(_S())  # type: ignore[arg-type]
    assert said.startswith("git_add failed, as 'src/x.py' was not found (`fatal: pathspec")
    assert claims_change(said) is False


def test_a_lookup_output_in_the_history_does_not_name_the_described_file() -> None:
    request = "stage the modified test files in /home/u/repo"
    args = {"repo_path": "/home/u/repo", "files": ["src/calc.py"]}
    note = [{"role": "assistant", "content": f"git_status returned {STATUS}"}]
    assert unnamed_paths(GIT_ADD, args, request, note, [STATUS]) == {"files": ["src/calc.py"]}
    said = [{"role": "user", "content": "the file I mean is src/calc.py"}]
    assert unnamed_paths(GIT_ADD, args, request, said, [STATUS]) == {}


MKDIR = _tool("filesystem", "create_directory", "Create a new directory.", path="string")


def test_a_change_made_beside_one_not_made_is_answered_from_the_calls() -> None:
    from nexus_agent.agent.request import Request
    from nexus_agent.agent.turn import _folder_named, _partly_done, _Step

    made = _Step("filesystem__create_directory", MKDIR, {"path": "/h/archive/q2"}, "Successfully created", False, True)
    refused = "move_file was not run: move_file needs source, and no such file is named in the request"
    said = _partly_done([made], [refused])
    assert said is not None and said.startswith("Done: create_directory returned `Successfully created`.")
    assert "Not done: move_file was not run" in said
    # the move ran after its lookup: nothing is left undone, and the model answers
    moved = _Step("filesystem__move_file", MOVE, {"source": "/h/r/a", "destination": "/h/b"}, "Moved", False, True)
    assert _partly_done([made, moved], [refused]) is None
    assert _partly_done([], [refused]) is None  # nothing made: _changes_not_made answers
    # the folder the request finds the refused move's object in is where the next step lists
    request = Request.parse("move the Q2 report from /h/reports into /h/archive")
    assert _folder_named({"source": "/h/reports/Q2-report", "destination": "/h/archive/Q2"}, request) == "/h/reports"
    assert _folder_named({"source": "/elsewhere/x", "destination": "/h/archive/x"}, request) is None
    # the folder itself written as the object is listed; its parent, a prefix of every path named, is not
    nested = Request.parse("move the Q2 report from /h/files/reports into /h/files/archive/2026-q2")
    assert _folder_named({"source": "/h/files/reports", "destination": "/h/files/archive/2026-q2"}, nested) == (
        "/h/files/reports"
    )
    assert _folder_named({"source": "/h/files/Q2.csv", "destination": "/h/files/archive/2026-q2"}, nested) is None


def test_a_found_file_must_be_in_the_state_described() -> None:
    from nexus_agent.agent.grounding import status_states

    status = (
        "Repository status:\nOn branch main\nChanges not staged for commit:\n"
        '  (use "git add <file>..." to update what will be committed)\n\tmodified:   src/calc.py\n\n'
        'Untracked files:\n  (use "git add <file>..." to include in what will be committed)\n\tdocs/\n\tnotes.txt\n'
    )
    assert status_states(status) == {
        "src/calc.py": {"modified", "changed", "unstaged", "deleted"},
        "docs/": {"untracked", "new"},
        "notes.txt": {"untracked", "new"},
    }
    request = "Stage every untracked file in /home/u/repo, but not the modified one."
    wrong = {"repo_path": "/home/u/repo", "files": ["src/calc.py"]}
    assert unnamed_paths(GIT_ADD, wrong, request, (), [status]) == {"files": ["src/calc.py"]}
    right = {"repo_path": "/home/u/repo", "files": ["notes.txt", "docs/"]}
    assert unnamed_paths(GIT_ADD, right, request, (), [status]) == {}
    # no status read: nothing to tell the state by
    assert unnamed_paths(GIT_ADD, right, request, (), ["[FILE] notes.txt\n[DIR] docs"]) == {}


def test_the_files_in_the_described_state_are_the_ones_staged() -> None:
    from nexus_agent.agent.grounding import described_files
    from nexus_agent.agent.request import Request
    from nexus_agent.agent.turn import _files_described

    status = "Changes not staged for commit:\n\tmodified:   src/calc.py\n\nUntracked files:\n\tdocs/\n\tnotes.txt\n"
    request = Request.parse("Stage every untracked file in /home/u/repo, but not the modified one.")
    assert described_files(request, [status]) == ["docs/", "notes.txt"]
    args = {"repo_path": "/home/u/repo", "files": ["src/calc.py"]}
    assert _files_described(GIT_ADD, args, request, [status]) == {**args, "files": ["docs/", "notes.txt"]}
    # the words before the noun narrow the state: no modified test file is listed, so nothing is chosen
    tests = Request.parse("stage the modified test files in /home/u/repo")
    assert described_files(tests, [status]) == []
    assert _files_described(GIT_ADD, args, tests, [status]) is None
    # no state described: the model's choice stands
    assert described_files("stage notes.txt in /home/u/repo", [status]) == []


COMMENT_ON = _tool("github", "add_issue_comment", "Add a comment to an issue", owner="string", repo="string",
                   issue_number="number", body="string")  # fmt: skip
ISSUE_WRITE = _tool("github", "issue_write", "Create or update an issue", owner="string", repo="string", title="string")


def test_a_new_issue_is_mentioned_in_a_comment_on_the_one_named() -> None:
    import json

    from nexus_agent.agent.request import Request
    from nexus_agent.agent.turn import _refers_to_created, _Step

    created = _Step("github__issue_write", ISSUE_WRITE, {"title": "Redirect"}, json.dumps({"number": 8}), False, True)
    request = Request.parse(
        "Open an acme/web issue 'Redirect old blog URLs' and then mention the new issue's number in a comment on "
        "the footer links issue (#3)."
    )
    wrote = {"owner": "acme", "repo": "web", "issue_number": 8, "body": "Redirect old blog URLs"}
    fixed = _refers_to_created(COMMENT_ON, wrote, request, [created])
    assert fixed["issue_number"] == 3 and fixed["body"] == "Redirect old blog URLs (#8)"
    # already there: unchanged
    ok = {**wrote, "issue_number": 3, "body": "Follow-up in #8"}
    assert _refers_to_created(COMMENT_ON, ok, request, [created]) == ok
    # "… then comment 'done' on it": the new issue is the object, nothing is mentioned
    plain = Request.parse("Open an acme/web issue 'X' and then comment 'done' on it")
    on_new = {**wrote, "body": "done"}
    assert _refers_to_created(COMMENT_ON, on_new, plain, [created]) == on_new
    # nothing created this turn: unchanged
    assert _refers_to_created(COMMENT_ON, wrote, request, []) == wrote
    # GitHub's server answers a create with its id and url: the number is the url's, not the id
    minimal = json.dumps({"id": "26", "url": "https://github.com/acme/web/issues/8"})
    created = _Step("github__issue_write", ISSUE_WRITE, {"title": "Redirect"}, minimal, False, True)
    assert _refers_to_created(COMMENT_ON, wrote, request, [created])["body"] == "Redirect old blog URLs (#8)"


CREATE_BRANCH = Tool(
    "github",
    "create_branch",
    "Create a new branch in a GitHub repository",
    {
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "repo": {"type": "string"},
            "branch": {"type": "string"},
            "from_branch": {"type": "string"},
        },
        "required": ["owner", "repo", "branch"],
    },
)


def test_a_branch_to_start_from_must_be_named() -> None:
    from nexus_agent.agent.grounding import unnamed_branches

    request = "In acme/api, start a branch called feature/per-client from the branch of the rate limiting PR."
    made_up = {"owner": "acme", "repo": "api", "branch": "feature/per-client", "from_branch": "rate-limiting-pr"}
    assert unnamed_branches(CREATE_BRANCH, made_up, request) == {"from_branch": "rate-limiting-pr"}
    decision = decide(CREATE_BRANCH, {"readOnlyHint": False}, made_up, request, [], auto_yes=True)
    assert isinstance(decision, Refuse) and "no such branch" in decision.reason
    # found by a lookup: the pull request's head branch
    found = '[{"number": 4, "title": "Rate limiting", "head": {"ref": "feature/rate-limit"}}]'
    args = {**made_up, "from_branch": "feature/rate-limit"}
    assert unnamed_branches(CREATE_BRANCH, args, request, (), [found]) == {}
    assert isinstance(decide(CREATE_BRANCH, {"readOnlyHint": False}, args, request, [], True, [found]), Run)
    # a default branch, or one the request writes, is named; a prefix of a named one is not
    assert unnamed_branches(CREATE_BRANCH, {**made_up, "from_branch": "main"}, request) == {}
    assert unnamed_branches(CREATE_BRANCH, {**made_up, "from_branch": "feature/per"}, request) != {}
    # a ref a create of this turn returned names its branch
    made = '{"ref": "refs/heads/feature/per", "object": {"sha": "abc"}}'
    assert unnamed_branches(CREATE_BRANCH, {**made_up, "from_branch": "feature/per"}, request, (), [made]) == {}
    # the pull request's number is no branch, though the lookup returned it
    assert unnamed_branches(CREATE_BRANCH, {**made_up, "from_branch": "4"}, request, (), [found]) != {}


def test_a_pull_requests_branch_is_in_the_step_view_when_a_branch_is_asked_for() -> None:
    from nexus_agent.agent.view import step_view

    rows = '[{"number": 4, "title": "Rate limiting", "head": {"ref": "feature/rate-limit", "sha": "abc"}}]'
    assert "feature/rate-limit" in step_view(rows, "start a branch from the branch of the rate limiting PR")
    assert "feature/rate-limit" not in step_view(rows, "close the rate limiting PR")


def test_a_checkout_of_a_branch_the_request_names_reads_nothing_first() -> None:
    from nexus_agent.agent.request import Request
    from nexus_agent.agent.turn import _branch_given

    checkout = Tool(
        "git",
        "git_checkout",
        "Switch branches.",
        {"type": "object", "properties": {"repo_path": {"type": "string"}, "branch_name": {"type": "string"}}},
    )
    assert _branch_given(checkout, Request.parse("Switch /h/repo to the feature/csv-export branch."))
    assert not _branch_given(checkout, Request.parse("Check out the branch about PDF export in /h/repo."))
    assert not _branch_given(WRITE, Request.parse("Switch /h/repo to the feature/csv-export branch."))
