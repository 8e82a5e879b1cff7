//! Secrets out of text that leaves the process: a URL's userinfo (`user:password@`) and the
//! values of query parameters that carry credentials (`sig`, `X-Amz-Signature`, `token`,
//! Azure SAS fields, …). One function for all of oxprof: applied where errors are built from
//! URLs, and again at every edge (the CLI's error line, HTTP error bodies, the request log,
//! Python exceptions), so a secret a user typed into a logdir URL is never printed, logged
//! or answered.
//!
//! The text around a secret is kept as it was (only the secret becomes [`REDACTED`]), so a
//! message still names the host and the object.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "***";

/// Query parameters whose values are credentials (compared without case): signed URLs of
/// S3 (SigV4 and V2), GCS, Azure SAS (every field of the token, not only `sig`), CloudFront,
/// Alibaba OSS, and the usual names of tokens, keys and passwords.
const SECRET_PARAMETERS: &[&str] = &[
    // AWS SigV4 and V2 presigned URLs.
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "awsaccesskeyid",
    "signature",
    // Google Cloud Storage signed URLs.
    "x-goog-signature",
    "x-goog-credential",
    "x-goog-security-token",
    "googleaccessid",
    // Azure shared access signatures.
    "sig",
    "sv",
    "ss",
    "srt",
    "sp",
    "se",
    "st",
    "spr",
    "sr",
    "si",
    "sdd",
    "skoid",
    "sktid",
    "skt",
    "ske",
    "sks",
    "skv",
    "saoid",
    "suoid",
    "scid",
    // CloudFront and Alibaba OSS signed URLs.
    "policy",
    "key-pair-id",
    "ossaccesskeyid",
    // Generic credentials.
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth",
    "authorization",
    "code",
    "key",
    "apikey",
    "api_key",
    "api-key",
    "password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
];

/// Parts of a parameter name that mark it as a credential whatever else it says
/// (`sessionToken`, `x-oss-signature`, `db_password`, …).
const SECRET_NAME_PARTS: &[&str] = &["token", "secret", "passw", "signature", "credential", "apikey", "api_key"];

/// Whether a query parameter named `name` carries a credential.
fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMETERS.contains(&name.as_str()) || SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// Where a URL or a parameter value ends in free text: whitespace, quotes, angle brackets,
/// a backslash (an escaped quote in JSON) or a backtick.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\')
}

/// The length of a parameter's value at the start of `rest`: up to the next parameter
/// (`&`), fragment (`#`), or the end of the URL in the sentence around it (whitespace,
/// quotes, or punctuation such as `: ` that a message puts after a URL).
fn value_len(rest: &str) -> usize {
    let punctuation = |c: char| matches!(c, ':' | ',' | ';' | ')' | '.');
    for (i, c) in rest.char_indices() {
        if ends_value(c) || matches!(c, '&' | '#') {
            return i;
        }
        // Punctuation that only more punctuation follows to the end of a word.
        if punctuation(c) && rest[i..].chars().find(|&n| !punctuation(n)).is_none_or(ends_value) {
            return i;
        }
    }
    rest.len()
}

/// `text` with every secret replaced by [`REDACTED`]: the userinfo of each URL
/// (`scheme://user:password@host` → `scheme://***@host`) and the value of each query
/// parameter named as a credential (`?sig=…`, `&X-Amz-Signature=…`; anywhere in the text,
/// in a URL or not). Borrows `text` when there is nothing to hide.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut hidden: Vec<std::ops::Range<usize>> = Vec::new();
    // Userinfo: between `://` and the last `@` of the authority.
    let mut from = 0;
    while let Some(at) = text[from..].find("://").map(|i| from + i) {
        let start = at + 3;
        let authority_len =
            text[start..].find(|c: char| ends_value(c) || matches!(c, '/' | '?' | '#')).unwrap_or(text.len() - start);
        let authority = &text[start..start + authority_len];
        if let Some(userinfo) = authority.rfind('@').filter(|&n| n > 0 && &authority[..n] != REDACTED) {
            hidden.push(start..start + userinfo);
        }
        from = start;
    }
    // Credential parameters: `?name=value` or `&name=value`.
    for (at, _) in text.match_indices(['?', '&']) {
        let rest = &text[at + 1..];
        let Some(eq) = rest.find('=') else { continue };
        let name = &rest[..eq];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            continue;
        }
        if !is_secret_parameter(name) {
            continue;
        }
        let value_start = at + 1 + eq + 1;
        let value_len = value_len(&text[value_start..]);
        if value_len > 0 && &text[value_start..value_start + value_len] != REDACTED {
            hidden.push(value_start..value_start + value_len);
        }
    }
    if hidden.is_empty() {
        return Cow::Borrowed(text);
    }
    hidden.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for range in hidden {
        if range.start < copied {
            continue; // inside a part already hidden
        }
        out.push_str(&text[copied..range.start]);
        out.push_str(REDACTED);
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// A raw query string (`a=1&b=2`, percent-encoded, as a request line carries it) with
/// every secret replaced: credential parameters' values, and secrets inside values that are
/// themselves URLs (`?path=s3%3A%2F%2F…%3Fsig%3D…`), re-encoded.
pub fn redact_query(query: &str) -> Cow<'_, str> {
    let mut changed = false;
    let parts: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| {
            let Some((name, value)) = pair.split_once('=') else { return Cow::Borrowed(pair) };
            let decoded_name: String =
                url::form_urlencoded::parse(name.as_bytes()).map(|(k, _)| k.into_owned()).collect();
            if is_secret_parameter(&decoded_name) && value != REDACTED {
                changed = true;
                return Cow::Owned(format!("{name}={REDACTED}"));
            }
            let decoded: String = url::form_urlencoded::parse(format!("v={value}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            match redact(&decoded) {
                Cow::Owned(clean) => {
                    changed = true;
                    let encoded: String = url::form_urlencoded::byte_serialize(clean.as_bytes()).collect();
                    Cow::Owned(format!("{name}={encoded}"))
                }
                Cow::Borrowed(_) => Cow::Borrowed(pair),
            }
        })
        .collect();
    if changed { Cow::Owned(parts.join("&")) } else { Cow::Borrowed(query) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_hidden_and_the_host_kept() {
        assert_eq!(redact("http://user:pa55@127.0.0.1:9/logs: not found"), "http://***@127.0.0.1:9/logs: not found");
        assert_eq!(redact("https://TOKEN@host/x"), "https://***@host/x");
        // An `@` in the path is not userinfo.
        assert_eq!(redact("s3://b/a@b/x"), "s3://b/a@b/x");
        // Several URLs in one line, each in its own way.
        assert_eq!(
            redact("a http://u:p@h/x and \"https://v:q@g:1?x=1\" end"),
            "a http://***@h/x and \"https://***@g:1?x=1\" end"
        );
        assert!(matches!(redact("no secrets in s3://bucket/run"), Cow::Borrowed(_)));
    }

    #[test]
    fn credential_parameters_are_hidden_in_urls_and_text() {
        assert_eq!(
            redact("https://a.blob.core.windows.net/c/p?sv=2022-11-02&ss=b&sp=rl&se=2030&sig=abc%2Fdef: denied"),
            "https://a.blob.core.windows.net/c/p?sv=***&ss=***&sp=***&se=***&sig=***: denied"
        );
        assert_eq!(
            redact("GET https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=f00&x-id=GetObject"),
            "GET https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x-id=GetObject"
        );
        assert_eq!(redact("x?X-Goog-Signature=1#frag"), "x?X-Goog-Signature=***#frag");
        assert_eq!(
            redact(r#"{"error": "h/x.pb?token=t0k&run=a: gone"}"#),
            r#"{"error": "h/x.pb?token=***&run=a: gone"}"#
        );
        assert_eq!(redact("u?sessionToken=1&db_password=2"), "u?sessionToken=***&db_password=***");
        // A value ends where the sentence around the URL goes on.
        assert_eq!(redact("x?se=2030-01-01T00:00Z&sig=a/b=, then"), "x?se=***&sig=***, then");
        assert_eq!(redact("(see x?token=abc)."), "(see x?token=***).");
        // Ordinary parameters stay.
        assert!(matches!(redact("/data?run=a&tag=overview_page&host=h"), Cow::Borrowed(_)));
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        for text in ["http://u:p@h/x?sig=1&a=2", "plain", "a?token=&b=1", "https://@h"] {
            let once = redact(text).into_owned();
            assert_eq!(redact(&once), once, "{text}");
        }
    }

    #[test]
    fn queries_are_redacted_with_urls_inside_values() {
        assert_eq!(redact_query("run=a&token=s3cret"), "run=a&token=***");
        let url = "a=http%3A%2F%2Fu%3Ap%40h%2Fx%3Fsig%3D1&b=2";
        let clean = redact_query(url).into_owned();
        assert!(!clean.contains("u%3Ap") && !clean.contains("sig%3D1"), "{clean}");
        assert!(clean.ends_with("&b=2") && clean.starts_with("a=http"), "{clean}");
        assert!(matches!(redact_query("run=a&tag=b"), Cow::Borrowed(_)));
        assert!(matches!(redact_query(""), Cow::Borrowed(_)));
    }
}
