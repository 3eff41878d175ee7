"""Writes tests/fixtures/secrets_corpus.json: fake credentials, two per rule of gitleaks' default rules (8.x
``config/gitleaks.toml``: provider-prefixed tokens and keyword rules) and of detect-secrets' plugins (1.5).

Run: python3 tests/_make_secrets_corpus.py  (deterministic: the same file every time)
Each rule is written here as a template of its shape: ``{h:32}`` is 32 random lower-case hex digits, ``{a:20}``
lower-case letters and digits, ``{A:20}`` upper-case letters and digits, ``{m:40}`` mixed-case letters and digits,
``{w:43}`` those and ``_-``, ``{b:80}`` base64 characters, ``{d:16}`` digits, ``{l:34}`` letters. A keyword rule
(``@word``) is planted as ``<name with the word> <operator> <value>`` in varying spellings. Every entry keeps the
longest random part (the last of equal ones) as its ``needle``: the part that must never be stored anywhere.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

OUT = Path(__file__).resolve().parent / "fixtures" / "secrets_corpus.json"
_SETS = {"h": "0123456789abcdef", "H": "0123456789ABCDEF", "a": string.ascii_lowercase + string.digits,
         "A": string.ascii_uppercase + string.digits, "m": string.ascii_letters + string.digits,
         "w": string.ascii_letters + string.digits + "_-", "b": string.ascii_letters + string.digits + "+/",
         "d": string.digits, "l": string.ascii_letters, "L": string.ascii_lowercase}

# gitleaks: provider-prefixed tokens (planted bare, as the whole string, and inside text)
PREFIXED = {
    "1password-service-account-token": "ops_eyJ{b:260}",
    "adobe-client-secret": "p8e-{m:32}",
    "age-secret-key": "AGE-SECRET-KEY-1{Z:58}",
    "alibaba-access-key-id": "LTAI{m:20}",
    "atlassian-api-token": "ATATT3{w:186}",
    "authress-service-client-access-key": "sc_{a:20}.{a:5}.acc_{a:20}.{b:60}",
    "aws-access-token": "AKIA{A:16}",
    "azure-ad-client-secret": "{m:3}8Q~{m:34}",
    "clickhouse-cloud-api-secret-key": "4b1d{m:38}",
    "clojars-api-token": "CLOJARS_{a:60}",
    "cloudflare-origin-ca-key": "v1.0-{h:24}-{h:146}",
    "databricks-api-token": "dapi{h:32}",
    "digitalocean-access-token": "doo_v1_{h:64}",
    "digitalocean-pat": "dop_v1_{h:64}",
    "digitalocean-refresh-token": "dor_v1_{h:64}",
    "doppler-api-token": "dp.pt.{m:43}",
    "duffel-api-token": "duffel_test_{w:43}",
    "dynatrace-api-token": "dt0c01.{A:24}.{A:64}",
    "easypost-api-token": "EZAK{m:54}",
    "easypost-test-api-token": "EZTK{m:54}",
    "facebook-access-token": "{d:15}|{w:32}",
    "facebook-page-access-token": "EAAM{m:110}",
    "flutterwave-encryption-key": "FLWSECK_TEST-{h:12}",
    "flutterwave-public-key": "FLWPUBK_TEST-{h:32}-X",
    "flutterwave-secret-key": "FLWSECK_TEST-{h:32}-X",
    "flyio-access-token": "fo1_{w:43}",
    "frameio-api-token": "fio-u-{w:64}",
    "gcp-api-key": "AIza{w:35}",
    "github-app-token": "ghs_{m:36}",
    "github-app-token-user": "ghu_{m:36}",
    "github-fine-grained-pat": "github_pat_{m:22}_{m:59}",
    "github-oauth": "gho_{m:36}",
    "github-pat": "ghp_{m:36}",
    "github-refresh-token": "ghr_{m:36}",
    "gitlab-cicd-job-token": "glcbt-{m:4}_{w:20}",
    "gitlab-deploy-token": "gldt-{w:20}",
    "gitlab-feature-flag-client-token": "glffct-{w:20}",
    "gitlab-feed-token": "glft-{w:20}",
    "gitlab-incoming-mail-token": "glimt-{w:25}",
    "gitlab-kubernetes-agent-token": "glagent-{w:50}",
    "gitlab-oauth-app-secret": "gloas-{w:64}",
    "gitlab-pat": "glpat-{w:20}",
    "gitlab-pat-routable": "glpat-{m:36}.01{a:7}",
    "gitlab-ptt": "glptt-{h:40}",
    "gitlab-rrt": "GR1348941{w:20}",
    "gitlab-runner-authentication-token": "glrt-{w:20}",
    "gitlab-runner-authentication-token-routable": "glrt-t1_{m:30}.01{a:7}",
    "gitlab-scim-token": "glsoat-{w:20}",
    "gitlab-session-cookie": "_gitlab_session={a:32}",
    "grafana-api-key": "eyJrIjoi{m:80}",
    "grafana-cloud-api-token": "glc_{b:60}",
    "grafana-service-account-token": "glsa_{m:32}_{h:8}",
    "harness-api-key": "pat.{w:22}.{m:24}.{m:20}",
    "hashicorp-tf-api-token": "{a:14}.atlasv1.{w:64}",
    "huggingface-access-token": "hf_{l:34}",
    "huggingface-organization-api-token": "api_org_{l:34}",
    "infracost-api-token": "ico-{m:32}",
    "intra42-client-secret": "s-s4t2ud-{h:64}",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ{m:40}.{w:43}",
    "jwt-base64": "ZXlKaGJHY2lPaU{m:80}",
    "linear-api-key": "lin_api_{m:40}",
    "maxmind-license-key": "{m:6}_{m:29}_mmk",
    "microsoft-teams-webhook": "https://acme.webhook.office.com/webhookb2/{h:8}-{h:4}-{h:4}-{h:4}-{h:12}@{h:8}-{h:4}-{h:4}-"
                               "{h:4}-{h:12}/IncomingWebhook/{h:32}/{h:8}-{h:4}-{h:4}-{h:4}-{h:12}",
    "npm-access-token": "npm_{m:36}",
    "octopus-deploy-api-key": "API-{A:26}",
    "openai-api-key": "sk-{m:20}T3BlbkFJ{m:20}",
    "openai-api-key-project": "sk-proj-{w:58}T3BlbkFJ{w:58}",
    "openshift-user-token": "sha256~{w:43}",
    "planetscale-api-token": "pscale_tkn_{w:40}",
    "planetscale-oauth-token": "pscale_oauth_{w:40}",
    "planetscale-password": "pscale_pw_{w:40}",
    "postman-api-token": "PMAK-{h:24}-{h:34}",
    "prefect-api-token": "pnu_{m:36}",
    "private-key": "-----BEGIN PRIVATE KEY-----\n{b:64}\n{b:64}\n-----END PRIVATE KEY-----",
    "private-key-ec": "-----BEGIN EC PRIVATE KEY-----\n{b:64}\n-----END EC PRIVATE KEY-----",
    "pulumi-api-token": "pul-{h:40}",
    "pypi-upload-token": "pypi-AgEIcHlwaS5vcmc{w:70}",
    "readme-api-token": "rdme_{a:70}",
    "rubygems-api-token": "rubygems_{h:48}",
    "scalingo-api-token": "tk-us-{w:48}",
    "sendgrid-api-token": "SG.{w:22}.{w:43}",
    "sendinblue-api-token": "xkeysib-{h:64}-{m:16}",
    "sentry-user-token": "sntryu_{h:64}",
    "settlemint-application-access-token": "sm_aat_{m:16}",
    "settlemint-personal-access-token": "sm_pat_{m:16}",
    "settlemint-service-access-token": "sm_sat_{m:16}",
    "shippo-api-token": "shippo_live_{h:40}",
    "shopify-access-token": "shpat_{h:32}",
    "shopify-custom-access-token": "shpca_{h:32}",
    "shopify-private-app-access-token": "shppa_{h:32}",
    "shopify-shared-secret": "shpss_{h:32}",
    "sidekiq-sensitive-url": "https://{h:8}:{h:8}@gems.contribsys.com/",
    "slack-app-token": "xapp-1-A{A:10}-{d:13}-{h:64}",
    "slack-bot-token": "xoxb-{d:12}-{d:13}-{m:24}",
    "slack-config-access-token": "xoxe.xoxp-1-{A:164}",
    "slack-config-refresh-token": "xoxe-1-{A:146}",
    "slack-legacy-bot-token": "xoxb-{d:10}-{m:24}",
    "slack-legacy-token": "xoxs-{d:10}-{d:10}-{d:12}-{h:64}",
    "slack-legacy-workspace-token": "xoxa-2-{m:40}",
    "slack-user-token": "xoxp-{d:12}-{d:12}-{d:12}-{m:32}",
    "slack-webhook-url": "https://hooks.slack.com/services/T{A:8}/B{A:10}/{m:24}",
    "slack-workflow-webhook": "https://hooks.slack.com/workflows/T{A:8}/A{A:10}/{d:18}/{m:24}",
    "sourcegraph-access-token": "sgp_{h:16}_{h:40}",
    "square-access-token": "sq0atp-{w:22}",
    "square-access-token-eaaa": "EAAA{w:60}",
    "stripe-access-token": "sk_live_{m:24}",
    "stripe-access-token-short": "sk_live_{m:10}",
    "stripe-restricted-key": "rk_test_{m:24}",
    "stripe-prod-key": "sk_prod_{m:24}",
    "twilio-api-key": "SK{h:32}",
    "typeform-api-token": "tfp_{w:59}",
    "vault-batch-token": "hvb.{w:140}",
    "vault-service-token": "hvs.{w:95}",
    "vault-service-token-legacy": "s.{m:24}",
    "yandex-api-key": "AQVN{w:36}",
    "new-relic-user-api-key": "NRAK-{A:27}",
    "new-relic-insert-key": "NRII-{m:32}",
    "new-relic-browser-api-token": "NRJS-{h:19}",
    "mailgun-private-api-token": "key-{h:32}",
    "mailgun-pub-key": "pubkey-{h:32}",
    "mailchimp-api-key": "{h:32}-us12",
    "telegram-bot-api-token": "{d:10}:A{w:34}",
    "plaid-api-token": "access-sandbox-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}",
    "dropbox-short-lived-api-token": "sl.{w:135}",
    "twitter-bearer-token": "A" * 22 + "{m:90}",
    "mapbox-api-token": "pk.{a:60}.{a:22}",
    "flyio-machine-token": "fm2_{b:120}",
    "sentry-org-token": "sntrys_eyJpYXQiO{b:40}LCJyZWdpb25fdXJs{b:40}_{b:43}",
    "stripe-webhook-secret": "whsec_{m:32}",
    "anthropic-api-key": "sk-ant-api03-{w:93}AA",
    "azure-storage-sas": "https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&sig={b:43}%3D",
}
# gitleaks keyword rules: ``<keyword> ... = <value>``; the keyword is not secret, the value is
KEYWORD = {
    "adafruit-api-key": ("adafruit", "{w:32}"), "adobe-client-id": ("adobe", "{h:32}"),
    "airtable-api-key": ("airtable", "{a:17}"), "algolia-api-key": ("algolia", "{a:32}"),
    "alibaba-secret-key": ("alibaba", "{a:30}"), "asana-client-id": ("asana", "{d:16}"),
    "asana-client-secret": ("asana", "{a:32}"), "atlassian-api-token-keyword": ("jira", "{m:24}"),
    "beamer-api-token": ("beamer", "b_{w:44}"), "bitbucket-client-id": ("bitbucket", "{a:32}"),
    "bitbucket-client-secret": ("bitbucket", "{w:64}"), "bittrex-access-key": ("bittrex", "{a:32}"),
    "bittrex-secret-key": ("bittrex", "{a:32}"), "cisco-meraki-api-key": ("meraki", "{h:40}"),
    "cloudflare-api-key": ("cloudflare", "{w:40}"), "cloudflare-global-api-key": ("cloudflare", "{h:37}"),
    "codecov-access-token": ("codecov", "{a:32}"), "cohere-api-token": ("cohere", "{m:40}"),
    "coinbase-access-token": ("coinbase", "{w:64}"), "confluent-access-token": ("confluent", "{a:16}"),
    "confluent-secret-key": ("confluent", "{a:64}"), "contentful-delivery-api-token": ("contentful", "{w:43}"),
    "datadog-access-token": ("datadog", "{a:40}"),
    "defined-networking-api-token": ("dnkey", "dnkey-{a:26}-{a:52}"),
    "discord-api-token": ("discord", "{h:64}"), "discord-client-id": ("discord", "{d:18}"),
    "discord-client-secret": ("discord", "{w:32}"), "droneci-access-token": ("droneci", "{a:32}"),
    "dropbox-api-token": ("dropbox", "{a:15}"),
    "dropbox-long-lived-api-token": ("dropbox", "{a:11}AAAAAAAAAA{w:43}"),
    "etsy-access-token": ("etsy", "{a:24}"), "facebook-secret": ("facebook", "{h:32}"),
    "fastly-api-token": ("fastly", "{w:32}"), "finicity-api-token": ("finicity", "{h:32}"),
    "finicity-client-secret": ("finicity", "{a:20}"), "finnhub-access-token": ("finnhub", "{a:20}"),
    "flickr-access-token": ("flickr", "{a:32}"), "freshbooks-access-token": ("freshbooks", "{a:64}"),
    "gitter-access-token": ("gitter", "{w:40}"), "gocardless-api-token": ("gocardless", "live_{w:40}"),
    "heroku-api-key": ("heroku", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    "hubspot-api-key": ("hubspot", "{H:8}-{H:4}-{H:4}-{H:4}-{H:12}"),
    "intercom-api-key": ("intercom", "{w:60}"), "jfrog-api-key": ("artifactory", "{a:73}"),
    "jfrog-identity-token": ("jfrog", "{a:64}"), "kraken-access-token": ("kraken", "{b:86}"),
    "kucoin-access-token": ("kucoin", "{h:24}"), "kucoin-secret-key": ("kucoin", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    "launchdarkly-access-token": ("launchdarkly", "{w:40}"), "linear-client-secret": ("linear", "{h:32}"),
    "linkedin-client-id": ("linkedin", "{a:14}"), "linkedin-client-secret": ("linkedin", "{a:16}"),
    "lob-api-key": ("lob", "live_{h:35}"), "lob-pub-api-key": ("lob", "test_pub_{h:31}"),
    "mailgun-signing-key": ("mailgun", "{h:32}-{h:8}-{h:8}"), "mattermost-access-token": ("mattermost", "{a:26}"),
    "messagebird-api-token": ("messagebird", "{a:25}"),
    "messagebird-client-id": ("messagebird", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    "netlify-access-token": ("netlify", "{w:43}"), "new-relic-user-api-id": ("newrelic", "{a:64}"),
    "nytimes-access-token": ("nytimes", "{w:32}"), "okta-access-token": ("okta", "00{w:40}"),
    "plaid-client-id": ("plaid", "{a:24}"), "plaid-secret-key": ("plaid", "{a:30}"),
    "privateai-api-token": ("privateai", "{a:32}"), "rapidapi-access-token": ("rapidapi", "{w:50}"),
    "sendbird-access-id": ("sendbird", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    "sendbird-access-token": ("sendbird", "{h:40}"), "sentry-access-token": ("sentry", "{h:64}"),
    "sidekiq-secret": ("BUNDLE_ENTERPRISE__CONTRIBSYS__COM", "{h:8}:{h:8}"),
    "snyk-api-token": ("snyk", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"), "sonar-api-token": ("sonar", "{w:40}"),
    "squarespace-access-token": ("squarespace", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"),
    "sumologic-access-id": ("sumo", "su{m:12}"), "sumologic-access-token": ("sumo", "{a:64}"),
    "travisci-access-token": ("travis", "{a:22}"), "twitch-api-token": ("twitch", "{a:30}"),
    "twitter-access-secret": ("twitter", "{a:45}"), "twitter-access-token": ("twitter", "{d:18}-{m:30}"),
    "twitter-api-key": ("twitter", "{a:25}"), "twitter-api-secret": ("twitter", "{a:50}"),
    "yandex-access-token": ("yandex", "t1.{w:20}.{w:86}"), "yandex-aws-access-token": ("yandex", "YC{w:38}"),
    "zendesk-secret-key": ("zendesk", "{a:40}"), "sourcegraph-legacy-token": ("sourcegraph", "{h:40}"),
    "generic-api-key-auth": ("auth", "{w:32}"), "generic-api-key-creds": ("creds", "{w:24}"),
    "generic-api-key-secret": ("secret", "{w:32}"), "generic-api-key-token": ("token", "{w:40}"),
    "generic-api-key-password": ("password", "{m:16}"), "generic-api-key-key": ("key", "{w:32}"),
    "hashicorp-tf-password": ("administrator_login_password", "{a:16}"),
    "cloudant-password": ("cloudant", "{h:64}"), "ibm-cloud-iam-key": ("ibm_cloud_iam", "{w:44}"),
    "ibm-cos-hmac-secret": ("ibm_cos_hmac", "{h:48}"), "softlayer-api-key": ("softlayer", "{a:64}"),
}
# gitleaks rules whose shape is a text around the value (``curl``, headers, config files)
CONTEXT = {
    "curl-auth-header": ("curl -H \"Authorization: Bearer ", "{w:40}", "\" https://api.example.com"),
    "curl-auth-user": ("curl -u deploy:", "{m:20}", " https://api.example.com/v1"),
    "kubernetes-secret-yaml": ("kind: Secret\ndata:\n  password: ", "{b:40}", "\n"),
    "nuget-config-password": ("<add key=\"ClearTextPassword\" value=\"", "{m:20}", "\" />"),
    "freemius-secret-key": ("'secret_key' => 'sk_", "{m:29}", "'"),
    "basic-auth-url": ("postgresql://app:", "{m:20}", "@db.internal:5432/prod"),
    "aws-secret-key": ("aws_secret_access_key = ", "{b:40}", ""),
    "azure-storage-account-key": ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=", "{b:86}", "==;"),
    "prose-password": ("the password is ", "{m:14}", ""),
    "prose-token": ("your API token was ", "{m:24}", ", keep it safe"),
    "prose-passcode-quoted": ("the passcode for ann is '", "{m:12}", "'"),
    "bearer-header": ("Authorization: Bearer ", "{w:32}", ""),
    "cookie-header": ("Cookie: session=", "{h:32}", "; theme=dark"),
    "set-cookie-header": ("Set-Cookie: sid=", "{m:40}", "; HttpOnly"),
    "softlayer-url": ("https://api.softlayer.com/soap/v3/", "{a:64}", ""),
    "credit-card-visa": ("card ", "4{d:15}", " declined"),
}
_NAMES = ("{KW}_API_KEY={v}", "{kw}_client_id: {v}", '"{kw}_value": "{v}"', "{kw}.secret = '{v}'",
          "export {KW}_TOKEN={v}", "{kw}-id := {v}")


def _fill(template: str, rng: random.Random) -> tuple[str, str]:
    out: list[str] = []
    longest = ""
    pos = 0
    while (start := template.find("{", pos)) >= 0:
        end = template.index("}", start)
        kind, n = template[start + 1:end].split(":")
        chars = _SETS.get(kind, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
        while True:
            part = "".join(rng.choice(chars) for _ in range(int(n)))
            mixed = any(c.isdigit() for c in part) or not any(c.isdigit() for c in chars)
            if mixed and (any(c.isalpha() for c in part) or not any(c.isalpha() for c in chars)):
                break
        out += (template[pos:start], part)
        longest = part if len(part) >= len(longest) else longest
        pos = end + 1
    out.append(template[pos:])
    return "".join(out), longest


def _luhn(digits: str) -> str:
    """``digits`` with its last digit made a valid Luhn check digit."""
    body = digits[:-1]
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(int(c) for c in reversed(body)))
    return body + str((10 - total % 10) % 10)


def build() -> list[dict[str, str]]:
    rng = random.Random(20391)
    entries: list[dict[str, str]] = []
    for round_ in range(2):
        for rule, template in PREFIXED.items():
            text, needle = _fill(template, rng)
            entries.append({"rule": f"gitleaks:{rule}", "placement": "bare", "text": text, "needle": needle})
        for i, (rule, (word, template)) in enumerate(KEYWORD.items()):
            value, needle = _fill(template, rng)
            shape = _NAMES[(i + round_ * 3) % len(_NAMES)]
            text = shape.format(KW=word.upper(), kw=word, v=value)
            entries.append({"rule": f"gitleaks:{rule}", "placement": "assignment", "text": text, "needle": needle})
        for rule, (before, template, after) in CONTEXT.items():
            value, needle = _fill(template, rng)
            if rule.startswith("credit-card"):
                value = needle = _luhn(value)
            entries.append({"rule": f"gitleaks:{rule}" if not rule.startswith(("prose", "credit")) else rule,
                            "placement": "context", "text": before + value + after, "needle": needle})
    return entries


if __name__ == "__main__":
    corpus = build()
    OUT.write_text(json.dumps(corpus, indent=1) + "\n")
    print(f"{len(corpus)} entries, {len({e['rule'] for e in corpus})} rules -> {OUT}")
