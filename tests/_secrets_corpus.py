"""The credential corpus: one text per detect-secrets plugin (``CORPUS``, checked against the plugins), and two
fake values per gitleaks rule (``RULES``, from ``tests/fixtures/secrets_corpus.json``, written by
``tests/_make_secrets_corpus.py``).

Each ``CORPUS`` entry: (name, detect-secrets plugin that must flag the text or None, text, needle). The needle is the
part of the secret that must never be stored or shown; all values are fake. ``tests/test_secrets.py`` checks that
each plugin really flags its text, so the corpus follows the rule set rather than shadow's own patterns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

_PEM = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
_OPENSSH = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUx"
_AZ = "Zm9vYmFyYmF6cXV4UXo4THQ3Zm9vYmFyYmF6cXV4UXo4THQ3Zm9vYmFyYmF6cXV4UXo4THQ3Zm9vYmFyYmF6cXV4UXo4THQ3Wjk="

CORPUS: Final[list[tuple[str, str | None, str, str]]] = [
    ("aws_access_key_id", "AWSKeyDetector", "key id AKIAQ7ZK3LMN4PQR2STU denied", "AKIAQ7ZK3LMN4PQR2STU"),
    ("aws_secret_in_text", "AWSKeyDetector",
     "aws_secret_access_key = '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'", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9rTkLm2A"),
    ("azure_account_key", "AzureStorageKeyDetector",
     f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={_AZ};EndpointSuffix=core", _AZ[:40]),
    ("basic_auth_url", "BasicAuthDetector", "connect https://deploy:Hx7pLm2QwZ@git.example.com/repo.git", "Hx7pLm2QwZ"),
    ("redis_url_empty_user", None, "cache at redis://:Rd1sPw9QxT7v@cache.internal:6379/0 down",
     "Rd1sPw9QxT7v"),
    ("url_password_with_at", None, "dsn postgresql://app:Pa55@Vault9zQ@db.internal:5432/prod refused", "Vault9zQ"),
    ("discord_bot_token", "DiscordBotTokenDetector",
     "bot MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs online",
     "ZnCjm1XVW7vRze4b7Cq4se7kKWs"),
    ("github_ghp", "GitHubTokenDetector", "push denied for ghp_R7tQ2xZ9mKpL4vW8nB3cY6dF1gH5jS0aE2uI",
     "R7tQ2xZ9mKpL4vW8nB3cY6dF1gH5jS0aE2uI"),
    ("gitlab_glpat", "GitLabTokenDetector", "gitlab token glpat-Xy7Qm2Lp9Rt4Vw8Nb3Cz rejected", "Xy7Qm2Lp9Rt4Vw8Nb3Cz"),
    ("jwt", "JwtTokenDetector",
     "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Qm9ndXNTaWduYXR1cmVYeXo expired", "Qm9ndXNTaWduYXR1cmVYeXo"),
    ("password_json_in_text", "KeywordDetector", 'request body was {"user": "ann", "password": "Tr0ub4dor-Zq81"}',
     "Tr0ub4dor-Zq81"),
    ("api_key_python_repr", "KeywordDetector", "config {'api_key': 'ak9Xq2LmZ7rTwP4vB8nC', 'region': 'eu'}",
     "ak9Xq2LmZ7rTwP4vB8nC"),
    ("password_kv", None, "login failed password=Sn0wFl4ke-99 for ann", "Sn0wFl4ke-99"),
    ("db_pass_colon", None, "db_pass: Qw3rtyDbP4ss", "Qw3rtyDbP4ss"),
    ("mailchimp", "MailchimpDetector", "list key 3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c-us12 ok",
     "3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c"),
    ("npm_token", "NpmDetector", "//registry.npmjs.org/:_authToken=npm_Qz8Lm3Xp7Rt2Vw9Nb4Cy6Dk1Fj5Gh0Ks2Le",
     "Qz8Lm3Xp7Rt2Vw9Nb4Cy6Dk1Fj5Gh0Ks2Le"),
    ("openai_legacy", "OpenAIDetector", "key 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 invalid",
     "T3BlbkFJQr8sTu1vWx4yZa7bCd0e"),
    ("openai_sk_proj", None, "openai key sk-proj-Xq9Lm2Zr7TwPv4B8nC3d invalid", "Xq9Lm2Zr7TwPv4B8nC3d"),
    ("anthropic_sk_ant", None, "claude key sk-ant-api03-Qp8Lx3Zm7Rt2Vw9Nb4Cy bad", "Qp8Lx3Zm7Rt2Vw9Nb4Cy"),
    ("tavily_key", None, "weather tvly-dev-Q7fKa8Bc9De0Fg1Hi2Jk3Lm4", "Q7fKa8Bc9De0Fg1Hi2Jk3Lm4"),
    ("pem_rsa", "PrivateKeyDetector", f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM}\n-----END RSA PRIVATE KEY-----", _PEM),
    ("pem_openssh", "PrivateKeyDetector",
     f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_OPENSSH}\n-----END OPENSSH PRIVATE KEY-----", _OPENSSH),
    ("pypi_token", "PypiTokenDetector",
     "upload with pypi-AgEIcHlwaS5vcmcCJDQ3ZjU1MGQ4LTg5YjUtNGQ4Zi05ZTA1LWE2ZmE3ZTYxY2FhMQACKlszLCI0YTYzMjNjYS1iMGM4",
     "CJDQ3ZjU1MGQ4LTg5YjUtNGQ4Zi05ZTA1LWE2ZmE3ZTYxY2FhMQACKlszLCI0YTYzMjNjYS1iMGM4"),
    ("sendgrid", "SendGridDetector", "mail key SG.Qm7Xz2Lp9RtVw8Nb3CzKdA.Fj5Gh0Ks2LeQz8Lm3Xp7Rt2Vw9Nb4Cy6Dk1Fj5Gh0Ks2Le",
     "Fj5Gh0Ks2LeQz8Lm3Xp7Rt2Vw9Nb4Cy6Dk1Fj5Gh0Ks2Le"),
    ("slack_xoxb", "SlackDetector", "slack token xoxb-2048593017-4417283910-qmzr7twxy2vbnclpkd9shfja rejected",
     "qmzr7twxy2vbnclpkd9shfja"),
    ("slack_webhook", "SlackDetector",
     "posting to https://hooks.slack.com/services/T0AB12CDE/B0FG34HIJ/Xw9Qz2Lm7Rt4Vp8Nb3Cy5Dk failed",
     "Xw9Qz2Lm7Rt4Vp8Nb3Cy5Dk"),
    ("discord_webhook", None,
     "post to https://discord.com/api/webhooks/1184459823712358400/q7Zx-2LmRt4Vp8Nb3Cy5DkQm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2 failed",
     "q7Zx-2LmRt4Vp8Nb3Cy5DkQm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2"),
    ("square_oauth", "SquareOAuthDetector", "square sq0csp-Qm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2LeQz8Lm3Xp7Rt2 ok",
     "Qm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2LeQz8Lm3Xp7Rt2"),
    ("stripe_sk_live", "StripeDetector", "charge failed with key sk_live_51HxQ2mKLb8Zr4TyUvWnPq0aB",
     "51HxQ2mKLb8Zr4TyUvWnPq0aB"),
    ("telegram", "TelegramBotTokenDetector", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 up",
     "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"),
    ("twilio_account", "TwilioKeyDetector", "sid AC1234567890abcdef1234567890abcdef used", "1234567890abcdef1234567890abcdef"),
    ("google_api_key", None, "maps key AIzaSyD4kP9xQ2mZr7TwXy2VbNcLpKd9sHfJaE0 over quota",
     "AIzaSyD4kP9xQ2mZr7TwXy2VbNcLpKd9sHfJaE0"),
    ("bearer_header", None, "Authorization: Bearer Zk3Lq9Xw2Vb7Nc4Mp8Rt", "Zk3Lq9Xw2Vb7Nc4Mp8Rt"),
    ("cookie_header", None, "sent headers Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark",
     "8f14e45fceea167a5a36dedd4bea2543"),
    ("artifactory_token", "ArtifactoryDetector", "artifactory token=AKCp5bSXzQ7Lm2Rt9Vw4Nb8Cy3Dk6Fj1Gh0Ks2LeQz8Lm3Xp7",
     "p5bSXzQ7Lm2Rt9Vw4Nb8Cy3Dk6Fj1Gh0Ks2LeQz8Lm3Xp7"),
    ("artifactory_password", "ArtifactoryDetector", "password: AP6xQ7Lm2Rt9Vw4Nb8Cy3", "AP6xQ7Lm2Rt9Vw4Nb8Cy3"),
    ("cloudant_url", "CloudantDetector",
     f"https://acme:{'3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c' * 2}@acme.cloudant.com", "3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c"),
    ("cloudant_password", "CloudantDetector", f"cloudant_password = '{'9a7b2d4e6f8a0b1c' * 4}'", "9a7b2d4e6f8a0b1c"),
    ("ibm_cloud_iam", "IbmCloudIamDetector", 'ibm_cloud_iam_api_key = "Qm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2LeQz8Lm3Xp7Rt"',
     "Qm7Xz2Lp9RtVw8Nb3CzKdAFj5Gh0Ks2LeQz8Lm3Xp7Rt"),
    ("ibm_cos_hmac", "IbmCosHmacDetector", 'secret_access_key = "7c3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c3f1c9a7b2d4e6f"',
     "7c3f1c9a7b2d4e6f8a0b1c2d3e4f5a6b7c3f1c9a7b2d4e6f"),
    ("softlayer_key", "SoftlayerDetector", f'softlayer_api_key = "{"4e6f8a0b1c2d3e4f" * 4}"', "4e6f8a0b1c2d3e4f"),
    ("softlayer_url", "SoftlayerDetector", f"https://api.softlayer.com/soap/v3/{'b1c2d3e4f5a6b7c3' * 4}",
     "b1c2d3e4f5a6b7c3"),
]

#: Two fake values per gitleaks rule (and a few shapes of prose, headers and card numbers), each as a dict with
#: ``rule``, ``placement`` (``bare``: the token as a whole string; ``assignment``; ``context``), ``text``, ``needle``.
RULES: Final[list[dict[str, str]]] = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "secrets_corpus.json").read_text())

#: Argument names that name a credential: their values never reach the store whatever they look like.
KEY_NAMES: Final = (
    "passcode", "pass_", "creds", "pass", "pw", "db_pass", "signing_key", "encryption_key", "priv_key",
    "client_key", "master_key", "connection_string", "mfa_code", "cvv", "recovery_code", "seed_phrase", "password",
    "api_key", "X-Auth-Token", "privateKey", "credit_card", "hmac", "sig", "cardNumber", "webhook_secret",
)
#: Names whose values are hidden only when they look generated (a bare ``key`` names a lookup key as often).
GENERATED_ONLY_NAMES: Final = ("key", "keys", "Key")
#: Names that must stay readable (no credential).
PLAIN_NAMES: Final = ("sort_key", "primary_key", "title", "due_date", "monkey", "bypass", "passage", "keyword")
#: Values of credential-keyed arguments that a tool echoes in its exception text or result (``login(password=...)``,
#: ``connect(config={"auth": {"token": ...}})``): shapes no text pattern knows, found only by their argument's key.
ECHOED: Final = ("Hunter2-Login-Zq81", "Tok-Nested-Zq81")
