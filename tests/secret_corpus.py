"""A corpus of secrets and of look-alikes, in English and Chinese (issue 28).

``SECRETS`` holds (text, needle): the text as a user or a tool would write it, and the part that
must never be stored, shared or injected. ``LOOKALIKES`` holds ordinary text that looks like a
secret to a careless redactor (names with token/key/secret, numbers, hashes, ids, URLs, flags)
and must come through byte for byte. Values are generated from a seeded generator so that this
file itself does not look like a leaked credential to scanners, and every needle is distinct.
"""

from __future__ import annotations

import random
import string

_RNG = random.Random(28)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_UPPER_DIGITS = string.ascii_uppercase + string.digits


def _r(n: int, alphabet: str = _ALNUM) -> str:
    """A random value that holds at least one digit, one lower and one upper letter when the
    alphabet has them (a real key's shape)."""
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        kinds = [any(c.isdigit() for c in value)]
        if any(c.islower() for c in alphabet):
            kinds.append(any(c.islower() for c in value))
        if any(c.isupper() for c in alphabet):
            kinds.append(any(c.isupper() for c in value))
        if all(kinds):
            return value


def _pw() -> str:
    """A human-made password: words, digits, a symbol."""
    words = ["Correct", "Horse", "Blue", "Staple", "River", "Tiger", "Moon", "Sun"]
    return _RNG.choice(words) + _RNG.choice(words).lower() + str(_RNG.randint(10, 99)) + "!Q"


#: (known prefix + body) values; each is planted once in English and once in Chinese.
_PREFIXED: list[str] = [
    "sk-proj-" + _r(40),
    "sk-ant-api03-" + _r(40),
    "sk-" + _r(32, _HEX + "abcdef"),  # DeepSeek / OpenAI-compatible
    "ghp_" + _r(36),
    "gho_" + _r(36),
    "github_pat_11" + _r(20) + "_" + _r(50),
    "glpat-" + _r(20),
    "xoxb-" + "1234567890-" + _r(24),
    "xapp-1-A" + _r(10, _UPPER_DIGITS) + "-" + "1234567890123-" + _r(40, _HEX),
    "AKIA" + _r(16, _UPPER_DIGITS),
    "ASIA" + _r(16, _UPPER_DIGITS),
    "LTAI" + _r(20),
    "AKID" + _r(32),
    "sk_live_" + _r(24),
    "rk_test_" + _r(24),
    "whsec_" + _r(32),
    "AIza" + _r(35),
    "ya29." + _r(60),
    "npm_" + _r(36),
    "pypi-AgEIcHlwaS5vcmc" + _r(60),
    "hf_" + _r(34),
    "SG." + _r(22) + "." + _r(43),
    "gsk_" + _r(52),
    "dop_v1_" + _r(64, _HEX),
    "shpat_" + _r(32, _HEX),
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _r(20) + "." + _r(43),
]

_EN = [
    "Use {v} for the staging deploy.",
    "export API_CLIENT_VALUE={v}",
    "curl -H 'X-Api-Key: {v}' https://api.example.com/v1/items",
    "the key ({v}) was rotated yesterday",
]
_ZH = [
    "我的密钥是{v}，请保密",
    "访问令牌{v}测试一下",
    "生产环境密钥：{v}。",
    "用这个{v}调用接口",
]

SECRETS: list[tuple[str, str]] = []
for i, value in enumerate(_PREFIXED):
    SECRETS.append((_EN[i % len(_EN)].format(v=value), value))
    other = value[:-6] + _r(6, _HEX)  # a second, distinct value of the same kind
    SECRETS.append((_ZH[i % len(_ZH)].format(v=other), other))

_AWS_SECRET = _r(40, _B64)
_STRUCTURED: list[tuple[str, str]] = [
    (f"aws_secret_access_key {_AWS_SECRET}", _AWS_SECRET),
    ("数据库 postgres://app:{v}@db.internal:5432/app", _pw()),
    ("连接缓存用 redis://:{v}@cache.internal:6379/0 即可", _pw()),
    ("mongodb+srv://admin:{v}@cluster0.example.net/db", _pw()),
    ("SENTRY_DSN=https://{v}@o123.ingest.sentry.io/1", _r(32, _HEX)),
    ("git clone https://{v}@git.example.com/team/repo.git", _r(40)),
    ("https://api.example.com/v1?access_token={v}&x=1", _r(24)),
    ("Health check: curl -u admin:{v} http://127.0.0.1/api", _pw()),
    ("mysql -u root -p{v} app", _pw()),
    ("psql --password {v} -h db", _pw()),
    ("deploy --token {v} --env prod", _r(30)),
    ("curl -H 'Authorization: Bearer {v}'", _r(32)),
    ('headers = {{"Authorization": "Basic {v}"}}', _r(28, _B64)),
    ("export DATABASE_PASSWORD={v}", _pw()),
    ("DB_PASSWORD：{v}", _pw()),
    ('{{"client_secret": "{v}"}}', _r(30)),
    ("db_password: {v}", _pw()),
    ('OPENAI_API_KEY = "{v}"', _r(40)),
    ("SECRET_KEY_BASE={v}", _r(64, _HEX)),
    ("ENCRYPTION_SALT={v}", _r(20, _HEX)),
    ("数据库密码是 {v}", _pw()),
    ("口令：{v}，别告诉别人", _pw()),
    ("把 API 密钥设为 {v}", _r(32)),
    ("服务器的密码为{v}", _pw()),
    ("the password is {v}", _pw()),
    ("密码是 {v}", str(_RNG.randint(10_000_000, 99_999_999))),
    ("note <private>diary {v}</private> end", "PrivateMarker" + _r(8)),
]
for template, value in _STRUCTURED:
    SECRETS.append((template.format(v=value) if "{v}" in template else template, value))

NEEDLES = [needle for _, needle in SECRETS]
assert len(set(NEEDLES)) == len(NEEDLES)

#: ``.env`` lines whose names say nothing secret: only the .env rule masks them.
ENV_VALUES = {
    "ENCRYPTION_SEED": _r(20, _HEX),
    "WEBHOOK_SIGNING": "whsec_" + _r(16),
    "SENTRY": "https://" + _r(32, _HEX) + "@o123.ingest.sentry.io/1",
    "PLAIN_SETTING": "EnvOnly" + _r(12),
}

LOOKALIKES: list[str] = [
    "max_tokens = 16384",
    "max_tokens = 4096",
    "TOKEN_LIMIT = 100000",
    "author_id = 12345678",
    "AUTHOR_EMAIL=dev@example.com",
    "OAUTH_CALLBACK_URL=https://app.example.com/callback",
    "tokenizer: sentencepiece-v2.model",
    "pwd=/home/dev/project",
    "set PASSWORD_HASHER=argon2id",
    "authorization: required for all admin endpoints",
    "REFRESH_TOKEN_TTL = 604800",
    "REFRESH_TOKEN_TTL = 2592000",
    "ACCESS_TOKEN_EXPIRES_IN=3600",
    "JWT_ALGORITHM=HS256",
    "SECRET_NAME=prod/db",
    'api_key_header = "X-Api-Key"',
    "password_min_length: 12",
    "token_count = 4096",
    "num_keys = 65536",
    'key = "user_id"',
    'cache_key = "user_profile_cache_2024"',
    "pin_memory = True",
    "bypass_cache=1",
    "secret = load_secret(name)",
    "password = getpass.getpass()",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "export PATH=$HOME/.local/bin:$PATH",
    "export NODE_ENV=production",
    "git commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
    "request 550e8400-e29b-41d4-a716-446655440000 failed",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Use scikit-learn (sk-learn) for the baseline model.",
    "The desk-api and task-manager services restart every 5 minutes.",
    "AKIA prefixes identify AWS access keys.",
    "ghp_ tokens are GitHub personal access tokens.",
    "mysql -u root -p app",
    "mkdir -p build && cp -r dist build",
    "git push -u origin main",
    "curl -u $API_USER:$API_PASS https://example.com",
    "psql --password-file /run/secrets/db -h db",
    "Bearer tokens expire after one hour.",
    "Authorization header missing on /admin",
    "The password reset flow sends an email with a one-time link.",
    "redis://cache.internal:6379/0",
    "postgres://localhost:5432/app",
    "https://sentry.io/organizations/acme/issues/",
    "See https://docs.example.com/auth?page=2#tokens for details.",
    "KeyError: 'user_id'",
    "TokenExpiredError: session expired at 12:00",
    'version = "2.31.0"',
    "SESSION_COOKIE_SECURE = True",
    "key_id = 42",
    "the secret sauce is caching",
    "PasswordField(max_length=128)",
    "refresh_token_rotation: enabled",
    "密码长度至少 12 位",
    "令牌桶算法 token-bucket",
    "密码过期时间 2592000",
    "密钥轮换周期是 90 天",
    "请把密码重置链接发给用户",
    "令牌数上限 max_tokens = 16384",
    "口令错误次数超过 5 次后锁定",
    "访问令牌的有效期 REFRESH_TOKEN_TTL = 604800 秒",
    "密钥文件在 ~/.ssh/id_ed25519",
    "作者 author_id = 12345678",
    "凭证存放在 Vault 的 secret/prod 路径",
    "用 OAUTH_CALLBACK_URL=https://app.example.com/callback 回调",
    "分词器 tokenizer: sentencepiece-v2.model",
    "数据库连接 postgres://localhost:5432/app",
    "密码是必填项",
    "密钥长度 2048 位",
    "令牌使用 JWT 格式",
    "授权码模式 authorization_code",
    "私钥不要提交到仓库",
    "使用 argon2id 哈希密码",
    "API 密钥由环境变量 OPENAI_API_KEY 提供",
    "提交 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f 修复了登录",
]
