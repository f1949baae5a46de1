"""Failure extraction: the lines that say what broke, from the real output formats of test
runners, compilers, linters and runtimes; failures told from output alone, without false alarms."""

from __future__ import annotations

import pytest

from ctxmode.sessions.events import error_summary
from ctxmode.sessions.failures import error_type, informative_lines, looks_failed

PYTEST = """\
F.                                                                       [100%]
=================================== FAILURES ===================================
________________________________ test_rotation _________________________________

    def test_rotation():
        old = issue_refresh_token("u1")
        rotate(old)
        if accepts(old):
>           raise RefreshTokenReused("old token accepted after rotation")
E           RefreshTokenReused: old token accepted after rotation

tests/test_refresh.py:8: RefreshTokenReused
=========================== short test summary info ============================
FAILED tests/test_refresh.py::test_rotation - RefreshTokenReused: old token a...
1 failed, 1 passed in 0.07s"""

JEST = """\
 FAIL  src/email.test.js
  Email validation
    ✓ accepts a plain address (3 ms)
    ✕ rejects addresses without a domain (4 ms)

  ● Email validation › rejects addresses without a domain

    expect(received).toBe(expected) // Object.is equality

    Expected: false
    Received: true

      12 |   test('rejects addresses without a domain', () => {
    > 13 |     expect(isValid('user@')).toBe(false);
         |                              ^

      at Object.toBe (src/email.test.js:13:30)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 5 passed, 6 total
Snapshots:   0 total
Time:        0.512 s"""

GO = """\
--- FAIL: TestParseEmail (0.00s)
    email_test.go:14: got nil error, want ErrNoDomain
FAIL
exit status 1
FAIL	example.com/signup	0.004s"""

CARGO = """\
running 2 tests
test tests::parses ... ok
test tests::rejects_empty ... FAILED

failures:

---- tests::rejects_empty stdout ----
thread 'tests::rejects_empty' panicked at src/lib.rs:21:9:
assertion `left == right` failed
  left: Ok(())
 right: Err(Empty)

failures:
    tests::rejects_empty

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"""

TSC = """\
src/auth.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/auth.ts:30:3 - error TS2304: Cannot find name 'refresh'.

Found 2 errors in 1 file."""

MYPY = """\
src/ctx/auth.py:12: error: Incompatible return value type (got "str", expected "int")
Found 1 error in 1 file (checked 3 source files)"""

RUFF = """\
src/app.py:1:8: F401 [*] `os` imported but unused
Found 1 error.
[*] 1 fixable with the `--fix` option."""

ESLINT = """\
/home/dev/app/src/form.js
  12:5  error  'valid' is assigned a value but never used  no-unused-vars

✖ 1 problem (1 error, 0 warnings)"""

GCC = """\
main.c: In function 'main':
main.c:5:12: error: 'count' undeclared (first use in this function)
    5 |     return count;
      |            ^~~~~"""

JAVAC_MAVEN = """\
[INFO] Running com.example.EmailTest
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.05 s <<< FAILURE!
[ERROR] com.example.EmailTest.rejectsNoDomain  Time elapsed: 0.01 s  <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <false> but was: <true>
	at com.example.EmailTest.rejectsNoDomain(EmailTest.java:21)
[INFO] BUILD FAILURE"""

NPM = """\
npm error code ERESOLVE
npm error ERESOLVE unable to resolve dependency tree
npm error Found: react@19.0.0"""

PY_TRACEBACK = """\
Traceback (most recent call last):
  File "/home/dev/app/main.py", line 3, in <module>
    load()
  File "/home/dev/app/config.py", line 9, in load
    raise KeyError("DATABASE_URL")
KeyError: 'DATABASE_URL'"""

NODE_TRACE = """\
/home/dev/app/server.js:4
  app.listen(port)
      ^

TypeError: Cannot read properties of undefined (reading 'listen')
    at Object.<anonymous> (/home/dev/app/server.js:4:7)
    at Module._compile (node:internal/modules/cjs/loader:1554:14)

Node.js v20.20.2"""

UNITTEST = """\
F.
======================================================================
FAIL: test_expiry (tests.test_tokens.TokenTest.test_expiry)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/app/tests/test_tokens.py", line 9, in test_expiry
    self.assertEqual(ttl(), 7200)
AssertionError: 86400 != 7200

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)"""

MOCHA = """\
  signup
    1) rejects addresses without a domain

  0 passing (8ms)
  1 failing

  1) signup
       rejects addresses without a domain:
     AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:
true !== false"""


@pytest.mark.parametrize(
    ("output", "must", "kind"),
    [
        (
            PYTEST,
            [
                "FAILED tests/test_refresh.py::test_rotation - RefreshTokenReused",
                "E RefreshTokenReused: old token accepted after rotation",
                "1 failed, 1 passed",
            ],
            "RefreshTokenReused",
        ),
        (
            JEST,
            [
                "● Email validation › rejects addresses without a domain",
                "Expected: false",
                "Received: true",
                "Tests: 1 failed, 5 passed, 6 total",
            ],
            None,
        ),
        (
            GO,
            ["--- FAIL: TestParseEmail", "email_test.go:14: got nil error, want ErrNoDomain"],
            None,
        ),
        (
            CARGO,
            [
                "test tests::rejects_empty ... FAILED",
                "thread 'tests::rejects_empty' panicked at src/lib.rs:21:9:",
                "assertion `left == right` failed",
                "test result: FAILED.",
            ],
            None,
        ),
        (TSC, ["error TS2322: Type 'string'", "error TS2304: Cannot find name"], "TS2322"),
        (MYPY, ["src/ctx/auth.py:12: error: Incompatible return value type"], None),
        (RUFF, ["src/app.py:1:8: F401"], "F401"),
        (ESLINT, ["12:5 error 'valid' is assigned a value but never used"], None),
        (GCC, ["main.c:5:12: error: 'count' undeclared"], None),
        (
            JAVAC_MAVEN,
            [
                "com.example.EmailTest.rejectsNoDomain",
                "AssertionFailedError: expected: <false> but was: <true>",
            ],
            "AssertionFailedError",
        ),
        (NPM, ["npm error code ERESOLVE", "unable to resolve dependency tree"], None),
        (PY_TRACEBACK, ["KeyError: 'DATABASE_URL'", 'config.py", line 9'], "KeyError"),
        (
            NODE_TRACE,
            ["TypeError: Cannot read properties of undefined (reading 'listen')"],
            "TypeError",
        ),
        (
            UNITTEST,
            [
                "FAIL: test_expiry (tests.test_tokens.TokenTest.test_expiry)",
                "AssertionError: 86400 != 7200",
            ],
            "AssertionError",
        ),
        (
            MOCHA,
            [
                "rejects addresses without a domain",
                "AssertionError [ERR_ASSERTION]: Expected values",
            ],
            "AssertionError",
        ),
    ],
)
def test_informative_lines_keep_what_broke(output: str, must: list[str], kind: str | None) -> None:
    lines = informative_lines(output, 400)
    text = "\n".join(" ".join(line.split()) for line in lines)
    for fragment in must:
        assert " ".join(fragment.split()) in text, (fragment, lines)
    assert sum(len(line) for line in lines) <= 400 + 240
    if kind is not None:
        assert error_type(output, lines) == kind


def test_the_summary_comes_after_what_broke() -> None:
    lines = informative_lines(PYTEST)
    assert lines[-1].startswith("1 failed")
    assert lines[0].startswith("FAILED tests/test_refresh.py::test_rotation")


def test_unknown_format_falls_back_to_lines_naming_an_error() -> None:
    output = (
        "compiling 12 modules\nlinking\nsomething went wrong: fatal linker failure in step 3\ndone"
    )
    assert informative_lines(output) == ["something went wrong: fatal linker failure in step 3"]


def test_error_summary_stores_lines_verbatim_and_redacted() -> None:
    secret = "sk-ant-api03-" + "a" * 40
    kind, message = error_summary(f"Exit code 1\n{PYTEST}\nError: key {secret} rejected")
    assert kind == "RefreshTokenReused"
    lines = message.splitlines()
    assert lines[0].startswith("FAILED tests/test_refresh.py::test_rotation")
    assert lines[-1] == "1 failed, 1 passed in 0.07s"
    assert secret not in message
    assert "Exit code 1" not in message


@pytest.mark.parametrize(
    ("output", "command"),
    [
        (PYTEST, "python -m pytest -q"),
        (GO, "go test ./..."),
        (JEST, "npx jest"),
        (CARGO, "cargo test"),
        (TSC, "npx tsc"),
        (PY_TRACEBACK, "python main.py"),
        ("On branch main\nnothing to commit, working tree clean\n", "git commit -m 'x'"),
        ("fatal: not a git repository (or any of the parent directories): .git", "git push"),
        ("bash: pytset: command not found", "pytset"),
    ],
)
def test_failure_told_from_output(output: str, command: str) -> None:
    assert looks_failed(output, command)


@pytest.mark.parametrize(
    ("output", "command"),
    [
        ("On branch main\nnothing to commit, working tree clean\n", "git status"),
        ("2 passed in 0.03s", "python -m pytest -q"),
        ("def handle_error(exc):\n    log.error('failed: %s', exc)\n", "cat src/errors.py"),
        (PYTEST, "cat pytest.log"),
        ("[main 1a2b3c4] Shorten the token lifetime\n 1 file changed", "git commit -m 'x'"),
        ("The error message is shown in red when the form fails validation.", "echo done"),
        ("", "true"),
    ],
)
def test_ordinary_output_is_not_a_failure(output: str, command: str) -> None:
    assert not looks_failed(output, command)


def test_details_found_in_the_resume_bench_are_kept() -> None:
    maven = (
        "[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.041 s <<< "
        "FAILURE! -- in com.shop.OrderServiceTest\n"
        "[ERROR] com.shop.OrderServiceTest.appliesDiscount -- Time elapsed: 0.008 s <<< FAILURE!\n"
        "org.opentest4j.AssertionFailedError: expected: <90> but was: <100>\n"
    )
    lines = informative_lines(maven)
    assert lines[0].startswith("[ERROR] com.shop.OrderServiceTest.appliesDiscount")
    assert lines[-1].startswith("[ERROR] Tests run: 4")  # the summary last
    node = (
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at renderList (/p/src/list.js:12:16)\n"
        "    at Module._compile (node:internal/modules/cjs/loader:1358:14)\n"
    )
    assert informative_lines(node)[1] == "at renderList (/p/src/list.js:12:16)"
    javac = (
        "App.java:14: error: cannot find symbol\n    x = load(path);\n  symbol:   variable path\n"
    )
    assert "symbol:   variable path" in informative_lines(javac)
    mocha = (
        "  1) Parser\n  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n"
        "\n0 !== 1\n"
    )
    assert "0 !== 1" in informative_lines(mocha)
    pytest_e = (
        "E       RefreshTokenReused: old token accepted\n"
        "FAILED tests/test_refresh.py::test_rotation - RefreshTokenReused: old token accepted\n"
    )
    assert informative_lines(pytest_e) == [
        "FAILED tests/test_refresh.py::test_rotation - RefreshTokenReused: old token accepted"
    ]
