"""``core.secret_scan``: long texts are redacted exactly as the rules of ``secret_patterns`` say
(issue 27), on the cases its shortcuts could get wrong.

The scan runs a pattern only where a candidate is (a keyword, a token's prefix, ``://``...), on
the candidate lines when its matches stay within a line, and judges again the lines an earlier
pattern changed. Each test below names the shortcut it checks and the wrong implementation it
would catch; each expected output is what the rules give (``plain_redact``, the path of short
texts, gives the same: checked too).
"""

from __future__ import annotations

import pytest

from ctxmode.core import secret_patterns, secret_scan
from ctxmode.core.redact import SCAN_CHARS, plain_redact, plain_secret_kinds, redact, secret_kinds

#: Prose that makes a text long enough for the scan and holds no trigger.
PAD = "Ordinary prose about the build, nothing to hide here at all.\n" * 5
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY"  # 40 characters, mixed case and digits
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "SflKxwRJSMeKKF2QT4fwpM"


def both(text: str) -> str:
    """``redact(text)`` through the scan, checked against the rules as written."""
    assert len(text) > SCAN_CHARS
    out = redact(text)
    assert out == plain_redact(text)
    assert secret_kinds(text) == plain_secret_kinds(text) == secret_scan.secret_kinds(text)
    return out


def test_scan_and_rules_agree_on_short_texts_too() -> None:
    """The scan is exact at any length (the dispatch only picks the cheaper one)."""
    for text in ("", "x", "API_KEY=9f8e7d6c5b4a3f2e1d0cAB", f"Bearer {JWT}", "a@b://c?token=x"):
        assert secret_scan.redact(text) == plain_redact(text)


# --- secrets at the edges of lines and of the text ---------------------------------------


@pytest.mark.parametrize("where", ["start", "end", "alone", "crlf"])
def test_token_at_a_line_edge(where: str) -> None:
    """Token patterns run on candidate lines only: a line start or end must behave as the
    text's start or end does (an off-by-one in the line of a hit misses the token)."""
    token = "ghp_" + "a1B2c3D4" * 5
    line = {
        "start": f"{token} was pasted",
        "end": f"pasted {token}",
        "alone": token,
        "crlf": f"pasted {token}\r",
    }[where]
    out = both(PAD + line + "\n" + PAD)
    assert token not in out and "[REDACTED:github]" in out
    assert both(line + "\n" + PAD).startswith(line.replace(token, "[REDACTED:github]"))
    assert both(PAD + line).endswith(line.replace(token, "[REDACTED:github]"))


def test_every_token_prefix_is_found_wherever_it_stands() -> None:
    """Each literal a token pattern starts with is found by the anchor scans: at the start of
    the text, after a letter (no match there, the boundary fails), after CJK text, at the end."""
    values = {
        "jwt": JWT,
        "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
        "cloud_access_key": "LTAI5tAbCdEfGh12345678",
        "github_token": "github_pat_11" + "A" * 20 + "_" + "b" * 30,
        "gitlab_token": "glpat-" + "aB3" * 8,
        "slack_token": "xoxb-1234567890-abcdefghij",
        "slack_webhook": "https://hooks.slack.com/services/T000/B000/XXXXabcd",
        "anthropic_key": "sk-ant-api03-" + "aB3d" * 6,
        "openai_key": "sk-proj-" + "aB3d" * 8,
        "stripe_key": "rk_test_" + "aB3d" * 6,
        "google_api_key": "AIza" + "aB3d5" * 7,
        "google_oauth": "ya29." + "aB3d" * 6,
        "npm_token": "npm_" + "aB3d" * 9,
        "pypi_token": "pypi-AgEIcHlwaS5vcmc" + "x" * 50,
        "huggingface_token": "hf_" + "aB3d" * 8,
        "sendgrid_key": "SG." + "aB3d" * 5 + "." + "aB3d" * 6,
        "service_token": "dp.st." + "aB3d" * 8,
    }
    assert set(values) == {kind for kind, _ in secret_patterns.TOKEN_LITERALS} | {"slack_webhook"}
    for kind, value in values.items():
        for text in (f"{value} x\n{PAD}", f"{PAD}密钥{value}\n{PAD}", f"{PAD}at end {value}"):
            assert value not in both(text), kind
            assert kind in secret_kinds(text)
        glued = f"{PAD}x{value} y\n"  # preceded by a letter: no boundary, nothing to redact
        if kind != "slack_webhook":
            assert both(glued) == plain_redact(glued)


# --- matches across lines -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        (
            "Authorization:\n   Bearer abcdef1234567890XYZ",
            "Authorization:\n   Bearer [REDACTED:auth]",
        ),
        ("header is Bearer\n\tabcdef1234567890XYZ", "header is Bearer\n\t[REDACTED:auth]"),
        ("run it --password\n  Hunter2Hunter2 now", "run it --password\n  [REDACTED:secret] now"),
        ("the password is\n Tr0ub4dor&3x", "the password is\n [REDACTED:secret]"),
        ("curl -u\nadmin:hunter2hunter2 -u x", "curl -u\nadmin:[REDACTED:secret] -u x"),
        (
            "Proxy-Authorization: Basic dXNlcjpwYXNzd29yZDEyMw== x Authorization: token abc123def",
            "Proxy-Authorization: Basic [REDACTED:auth] x Authorization: token [REDACTED:auth]",
        ),
    ],
)
def test_a_trigger_on_one_line_and_its_value_on_the_next(line: str, redacted: str) -> None:
    """These patterns may match across a line end: they run over the whole text, tried where
    their keyword is (a per-line run, or a wrong start offset such as ``proxy-``, misses them)."""
    assert both(PAD + line + "\n" + PAD) == PAD + redacted + "\n" + PAD


def test_a_value_on_the_next_line_of_a_per_line_pattern_stays() -> None:
    """``assignment`` is per line by the rules: ``password`` and ``= value`` on two lines stay
    (a whole-text run would take them)."""
    text = PAD + "password\n= hunter2hunter2\n" + PAD
    assert both(text) == text


def test_pem_blocks_closed_and_open() -> None:
    closed = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234abcd\n-----END RSA PRIVATE KEY-----"
    )
    assert both(PAD + closed + "\nafter\n" + PAD) == PAD + "[REDACTED:private_key]\nafter\n" + PAD
    opened = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    assert both(PAD + opened + PAD) == PAD + "[REDACTED:private_key]"


def test_private_sections_across_lines_then_per_line_patterns() -> None:
    """``<private>`` sections go first and take line ends with them: later patterns must see
    the lines as they are after it (keyword lines of the text before it would be misplaced)."""
    text = (
        PAD
        + "keep <private>home\naddress\nline three</private> keep\n"
        + "API_KEY=9f8e7d6c5b4a3f2e1d0cAB\n<PRIVATE>open\nto the end"
    )
    out = both(text)
    assert out == PAD + "keep [private] keep\nAPI_KEY=[REDACTED:secret]\n[private]"


# --- lines an earlier pattern changed -------------------------------------------------------


def test_a_line_that_gains_a_trigger_from_a_replacement() -> None:
    """``[REDACTED:aws]`` holds ``aws``: its line becomes one where ``aws_secret_key`` runs
    (the text holds ``secret`` elsewhere). Judging lines as they were before misses it."""
    text = PAD + "the secret store\nAKIAIOSFODNN7EXAMPLE " + AWS_SECRET + "\n"
    assert both(text) == PAD + "the secret store\n[REDACTED:aws] [REDACTED:aws]\n"
    without = PAD + "the store\nAKIAIOSFODNN7EXAMPLE " + AWS_SECRET + "\n"  # no trigger at all
    assert both(without) == PAD + "the store\n[REDACTED:aws] " + AWS_SECRET + "\n"


def test_a_line_that_loses_its_trigger_to_a_replacement() -> None:
    """``secret`` inside a GitHub token goes with it: ``aws_secret_key`` no longer runs on
    that line (but ``secret_kinds``, which tries each pattern on the text as given, names it)."""
    token = "ghp_secretAbCdEfGh1234567890abcdefghij12"
    text = PAD + f"aws notes\n{token} {AWS_SECRET}\n"
    assert both(text) == PAD + f"aws notes\n[REDACTED:github] {AWS_SECRET}\n"
    assert secret_kinds(text) == ["github_token", "aws_secret_key"]


def test_a_trigger_only_a_candidate_has_is_not_enough() -> None:
    """A pattern runs only when the text holds one of its triggers: ``-u`` then a tab is a
    candidate of ``cli_credentials`` but no trigger (``-u ``) of it; so is ``?ſecret=``, whose
    ``ſ`` the case-insensitive pattern takes for an ``s`` but lowering keeps."""
    tab = PAD + "curl -u\tadmin:hunter2hunter2 https://x\n"
    assert both(tab) == tab
    assert both(tab + "then -u root\n").endswith(
        "-u\tadmin:[REDACTED:secret] https://x\nthen -u root\n"
    )
    long_s = PAD + "docs\nhttps://x.io/cb?ſecret=abcDEF123456&x=1\n"
    assert both(long_s) == long_s
    assert "?ſecret=[REDACTED:url_param]&" in both(long_s + "token\n")


def test_mysql_password_only_on_the_line_naming_the_tool() -> None:
    text = PAD + "mysql -u root -pS3cretPass1 db\nother -pS3cretPass2 x\n"
    assert both(text) == PAD + "mysql -u root -p[REDACTED:secret] db\nother -pS3cretPass2 x\n"


# --- scripts and characters ----------------------------------------------------------------


def test_cjk_text_beside_secrets() -> None:
    text = (
        PAD + "数据库密码：S3cret99x，然后访问令牌=abcDEF1234567890xyz。密钥sk-proj-" + "aB3d" * 6
    )
    out = both(text + "\n" + PAD)
    assert out.startswith(PAD + "数据库密码：[REDACTED:secret]，然后访问令牌=[REDACTED:secret]。")
    assert "sk-proj" not in out


def test_a_character_that_lowers_to_two() -> None:
    """``İ`` lowers to two characters: positions in the lowered text are no longer positions in
    the text (using them unchecked cuts the wrong characters)."""
    text = "İ" * 300 + "\nAuthorization: Bearer abcdef1234567890XYZ and PASSWORD=Sup3rSecret!\n"
    out = both(text + "x İ " * 200 + "API_KEY=9f8e7d6c5b4a3f2e1d0cAB")
    assert "Authorization: Bearer [REDACTED:auth] and PASSWORD=[REDACTED:secret]\n" in out
    assert out.endswith("API_KEY=[REDACTED:secret]")


# --- very long lines -------------------------------------------------------------------------


def long_line(middle: str) -> str:
    return "word " * 120 + middle + " " + "z" * 500


@pytest.mark.parametrize(
    ("middle", "redacted"),
    [
        # a match whose value is no secret, then one inside it, searched again from its value
        ("TOKEN_TTL: API_KEY=9f8e7d6c5b4a3f2e1d0cAB", "TOKEN_TTL: API_KEY=[REDACTED:secret]"),
        # prefixes before the name: export and many spaces, $env:
        ("export      DB_PASSWORD=Sup3rSecret!", "export      DB_PASSWORD=[REDACTED:secret]"),
        ("$env:API_TOKEN=9f8e7d6c5b4a3f2e1d0cAB", "$env:API_TOKEN=[REDACTED:secret]"),
        # the keyword at the end of an 80-character name; at the start of one
        ("A" * 76 + "_KEY=9f8e7d6c5b4a3f2e1d0cAB", "A" * 76 + "_KEY=[REDACTED:secret]"),
        (
            "SECRET_" + "A" * 73 + "=9f8e7d6c5b4a3f2e1d0cAB",
            "SECRET_" + "A" * 73 + "=[REDACTED:secret]",
        ),
        # the keyword's anchor letter as the 80th character (``webhook``: its last ``k``)
        ("A" * 72 + "_WEBHOOK=9f8e7d6c5b4a3f2e1d0cAB", "A" * 72 + "_WEBHOOK=[REDACTED:secret]"),
        # a name of 81 characters is no name: kept
        ("A" * 77 + "_KEY=9f8e7d6c5b4a3f2e1d0cAB", "A" * 77 + "_KEY=9f8e7d6c5b4a3f2e1d0cAB"),
        # two assignments, spaces before the separator, a quoted value
        (
            'password = "hunter2hunter2", api_key: 9f8e7d6c5b4a3f2e1d0cAB',
            "password = [REDACTED:secret], api_key: [REDACTED:secret]",
        ),
    ],
)
def test_assignments_in_a_very_long_line(middle: str, redacted: str) -> None:
    """Long lines are searched for assignments around their keywords only: the start of each
    match must be found back from its keyword (a name's start, ``$env:``, ``export``)."""
    assert len(long_line(middle)) > secret_scan._LONG_LINE
    for text in (long_line(middle), PAD + long_line(middle) + "\n" + PAD):
        assert both(text) == text.replace(middle, redacted)


def test_a_very_long_line_of_base64_keeps_its_lookalikes() -> None:
    """A long line of random-looking text holds keywords by chance (``kEy``, ``sig``): no
    assignment there, and nothing else changes."""
    line = "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAkEy+sig/Auth0" * 300
    text = PAD + f'<image width="64" xlink:href="{line}"/>\n' + PAD
    assert both(text) == text


# --- the shared scans -------------------------------------------------------------------------


def test_every_keyword_is_found_by_its_anchor() -> None:
    """The keyword scans find each keyword (of ``assignment``, ``json_secret``...) in any case
    and next to any other, on the right line: a keyword missed leaves its line unredacted."""
    secret_scan._build()
    for keyword in (*secret_patterns.KEYWORDS, "aws"):
        for before, after in (("", ""), ("x", "y"), ("passtoken", "keysecret"), ("\n\n", "\n")):
            low = f"line one\n{before}{keyword}{after}\n"
            lines, aws, _ = secret_scan._keyword_lines(low)
            where = low.count("\n", 0, low.index(keyword))
            if keyword == "aws":
                assert where in aws
            else:
                assert where in lines, (keyword, before, after)
    # the words some patterns need apart, next to others sharing their anchor letter
    for text, flag in (
        ("proxy-authorization", secret_scan._AUTH),
        ("bearerauthorization", secret_scan._AUTH),
        ("authbearer", secret_scan._BEARER),
        ("passbearer", secret_scan._BEARER),
    ):
        assert secret_scan._keyword_lines(text)[2] & flag, text
    for text in ("auth", "oauth2 authorize", "authorizatio"):
        assert not secret_scan._keyword_lines(text)[2] & secret_scan._AUTH, text
    assert 0 in secret_scan._keyword_lines("the secret")[1]


def test_the_token_table_follows_the_pattern_order() -> None:
    """Token patterns run per line in pattern order; the scan's table lists them in that order
    (a swapped pair would redact ``sk-ant-…`` as ``openai``)."""
    order = [kind for kind, _, _ in secret_patterns.PATTERNS]
    kinds = [kind for kind, _ in secret_patterns.TOKEN_LITERALS]
    assert kinds == sorted(kinds, key=order.index)
    text = PAD + "sk-ant-api03-" + "aB3d" * 6 + "\n"
    assert "[REDACTED:anthropic]" in both(text)


def test_hits_of_several_scans_land_on_their_own_lines() -> None:
    """Each shared scan (one per anchor letter) reports its hits in its own order: the line of
    a hit must come from its position, whatever the scan (``secret`` is found by the ``c``
    scan, after the ``k`` scan found ``token`` further down; ``hf_`` by the ``_`` scan, after
    the ``J`` scan found a JWT further down)."""
    text = (
        PAD
        + "DB_SECRET=Sup3rSecret!\nplain\nAPI_TOKEN=9f8e7d6c5b4a3f2e1d0cAB\n"
        + "hf_"
        + "aB3d" * 8
        + "\nplain\n"
        + JWT
        + "\n"
    )
    assert both(text) == PAD + (
        "DB_SECRET=[REDACTED:secret]\nplain\nAPI_TOKEN=[REDACTED:secret]\n"
        "[REDACTED:huggingface]\nplain\n[REDACTED:jwt]\n"
    )


def test_short_texts_known_unchanged_are_unchanged() -> None:
    """A busy process first asks ``unchanged`` about a short text (a chunk title): it may say
    so only of a text the rules leave as it is, and must not say so of any secret."""
    from secret_corpus import LOOKALIKES, SECRETS

    titles = [
        "docs/en/docs/tutorial/security/oauth2-jwt.md > OAuth2 with Password, Bearer with JWT",
        'uv.lock > { url = "https://files.pythonhosted.org/packages/36/54/03625" }',
        "tests/test_security_api_key_header.py > def test_security_api_key",
        "docs/zh/docs/tutorial/security/first-steps.md > 安全 - 第一步 > 密码流",
        "src/app.py > class Settings > api_key: str = Field(...)",
    ]
    said = 0
    for text in [*titles, *LOOKALIKES, *(t for t, _ in SECRETS)]:
        for variant in (text, text.upper(), text.replace(" ", "\n"), f"x{text}y"):
            if secret_scan.unchanged(variant):
                said += 1
                assert plain_redact(variant) == variant, variant
                assert plain_secret_kinds(variant) == [], variant
    assert said > 50  # it does say so of most look-alikes and titles
    alone = [  # one pattern each, with no other candidate beside it
        "Bearer abcdef1234567890XYZ",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234abcd",
        "mysql -pS3cretPass1 db",
        "docs: token ?ſecret=abcDEF123456",
        "curl -u\tadmin:hunter2hunter2 -u x",
        "the password was Tr0ub4dor&3x",
        "密码 Hunter2Pass!",
    ]
    for text in [*alone, *(t for t, _ in SECRETS)]:
        assert plain_redact(text) != text, text
        assert not secret_scan.unchanged(text), text
    for _ in range(200):  # past QUICK_AFTER: redact asks it first
        assert redact("nothing to see") == "nothing to see"
    assert redact("API_KEY=9f8e7d6c5b4a3f2e1d0cAB") == "API_KEY=[REDACTED:secret]"
    assert secret_kinds(f"token {JWT}") == ["jwt"]
