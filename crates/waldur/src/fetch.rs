//! Fetches the Waldur export (the layout [`crate::pages`] reads) straight from the REST API with the offering's
//! URL and token from the site agent's config, the three lists the SLURM agent reads:
//!
//! - `GET /api/marketplace-provider-resources/?offering_uuid=U&state=OK&state=Erred&state=Updating`
//!   (the live states, [`LIVE_STATES`]) -> `resources-00001.json`, ...
//! - `GET /api/marketplace-provider-resources/<uuid>/team/` for each of them
//!   -> `team-<uuid>-00001.json`
//! - `GET /api/marketplace-offering-users/?offering_uuid=U` -> `offering-users-00001.json`, ...
//!
//! Each file is the raw body of one page. Pagination is Waldur's (`page`/`page_size`, a `Link`
//! header with `rel="next"`, the total in `X-Result-Count`, checked against what arrived); only the
//! page number is taken from a `next` link, so the token never goes to a host the config does not
//! name. Paging is bounded: an empty page ends a list, no list brings more items than it announced
//! or goes on past `ceil(total / items of page 1) + 1` pages, and none past [`MAX_PAGES`].
//! The API URL is parsed with ureq's own parser (no `USER@`; plain http only to loopback IP
//! literals and `localhost`), and [`proxy_for`] decides the proxy (none for plain http; for https
//! only http(s) CONNECT proxies, so the token stays inside TLS). Every request has a timeout; 5xx, 408, 429, timeouts and broken connections are retried a
//! bounded number of times with doubling back-off; other statuses fail at once with the API's
//! `detail`. The teams (one request per resource) are fetched on a few connections at once.
//! TLS is always verified (Mozilla's roots, or only the `--ca-cert` file's).
//! [`staging_dir`] + [`replace_dir`] put a finished export in place in one step.
//!
//! This is the one module of `waldur` that uses the network. Must not: print (progress goes to a
//! callback), spawn processes, follow a URL from a response, or let the token out: [`Token`]'s
//! Debug and Display are redacted, it is only ever put in the `Authorization` header, and any
//! text taken from a response reaches a message only through [`Token::shown`] (escaped, scrubbed
//! of the token, then cut).

use std::fmt;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

pub use super::pages::LIVE_STATES;
use super::pages::norm_uuid;

/// The API token of the agent config. Shown as `<redacted>` by Debug and Display; not Clone.
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Token {
    /// A token that can go into a header: printable ASCII without spaces.
    pub fn new(s: String) -> Option<Token> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())).then_some(Token(s))
    }

    /// `text` with every occurrence of the token replaced by `<redacted>` (see [`Token::shown`]).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for form in self.forms() {
            out = replace_ignoring_case(&out, &form, REDACTED);
        }
        redact_pieces(&out, self.0.as_bytes())
    }

    /// A server's text (a body, a header, an error of the HTTP library) as it may appear in a
    /// message: on one line with control characters escaped, then scrubbed of the token, then
    /// cut after `chars` characters (`...`). Scrubbing comes before the cut, so that a cut
    /// cannot leave a piece of the token behind; only the first [`SCANNED`] bytes are looked at.
    pub fn shown(&self, text: &str, chars: usize) -> String {
        let mut end = text.len().min(SCANNED);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut line = String::with_capacity(end);
        for word in text[..end].split_whitespace() {
            if !line.is_empty() {
                line.push(' ');
            }
            for c in word.chars() {
                if c.is_control() {
                    line.extend(c.escape_default());
                } else {
                    line.push(c);
                }
            }
        }
        let scrubbed = self.scrub(&line);
        match scrubbed.char_indices().nth(chars) {
            Some((i, _)) => format!("{}...", &scrubbed[..i]),
            None => scrubbed,
        }
    }

    /// The whole token as a server may quote it: as is, percent-encoded, JSON-escaped.
    fn forms(&self) -> Vec<String> {
        let t = self.0.as_str();
        let percent: String = t
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let json = serde_json::to_string(t).unwrap_or_default();
        let json = json.trim_matches('"').to_string();
        let mut forms = vec![t.to_string(), percent, json.replace('/', "\\/"), json];
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms.dedup();
        forms
    }
}

const REDACTED: &str = "<redacted>";
/// Bytes of a server's text that [`Token::shown`] looks at.
const SCANNED: usize = 64 << 10;
/// A run of this many characters of the token, anywhere in it, is scrubbed as the whole token is
/// (a server that cuts the header it quotes leaves a piece of the token).
const TOKEN_PIECE: usize = 8;

/// `text` with every ASCII-case-insensitive occurrence of `what` (ASCII) replaced by `with`.
fn replace_ignoring_case(text: &str, what: &str, with: &str) -> String {
    let (t, w) = (text.as_bytes(), what.as_bytes());
    if w.is_empty() || t.len() < w.len() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while i + w.len() <= t.len() {
        if t[i..i + w.len()].eq_ignore_ascii_case(w) {
            out.push_str(&text[copied..i]);
            out.push_str(with);
            i += w.len();
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// `text` with every run of at least [`TOKEN_PIECE`] characters (fewer for a shorter token)
/// that is a piece of `token` (ASCII letter case ignored) replaced by `<redacted>`.
fn redact_pieces(text: &str, token: &[u8]) -> String {
    let t = text.as_bytes();
    let min = TOKEN_PIECE.min(token.len()).max(1);
    let mut in_token = [false; 256];
    for b in token {
        in_token[usize::from(b.to_ascii_lowercase())] = true;
        in_token[usize::from(b.to_ascii_uppercase())] = true;
    }
    let mut covered = vec![false; t.len()];
    for i in 0..t.len() {
        if !in_token[usize::from(t[i])] {
            continue;
        }
        let longest = (0..token.len())
            .map(|j| t[i..].iter().zip(&token[j..]).take_while(|(a, b)| a.eq_ignore_ascii_case(b)).count())
            .max()
            .unwrap_or(0);
        if longest >= min {
            covered[i..i + longest].iter_mut().for_each(|c| *c = true);
        }
    }
    // The covered bytes match ASCII token bytes, so each run starts and ends on a char boundary.
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < t.len() {
        if covered[i] {
            while i < t.len() && covered[i] {
                i += 1;
            }
            out.push_str(REDACTED);
        } else {
            let start = i;
            while i < t.len() && !covered[i] {
                i += 1;
            }
            out.push_str(&text[start..i]);
        }
    }
    out
}

/// A failed fetch: what failed (with the URL, never the token), why, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchError {
    pub message: String,
    pub causes: Vec<String>,
    pub hint: String,
}

impl FetchError {
    fn new(message: impl Into<String>, hint: impl Into<String>) -> FetchError {
        FetchError { message: message.into(), causes: Vec::new(), hint: hint.into() }
    }
    fn cause(mut self, c: impl Into<String>) -> FetchError {
        self.causes.push(c.into());
        self
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        for c in &self.causes {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

/// Where the API is and how to authenticate, from one offering of the agent config.
#[derive(Debug)]
pub struct Access {
    /// The API root, ending in `/api/` (`https://waldur.example.org/api/`).
    pub api: String,
    pub offering_uuid: String,
    pub token: Token,
    /// The offering says `verify_ssl: false`; slurmplan verifies TLS anyway (the cli warns).
    pub verify_ssl_off: bool,
}

/// Read `waldur_api_url`, `waldur_offering_uuid`, `waldur_api_token` and `verify_ssl` of
/// `offerings[index]` (the offering `config::load_config` chose) from the agent config's text.
pub fn load_access(path: &Path, text: &str, index: usize) -> Result<Access, FetchError> {
    // A syntax error message could quote the token; `load_config` has reported the real one.
    let root: Value = serde_saphyr::from_str(text).map_err(|_| {
        FetchError::new(
            format!("`{}` is not valid YAML", path.display()),
            "run `slurmplan waldur build --export` to see the error",
        )
    })?;
    access_of(path, &root, index)
}

/// [`load_access`] from the tree `config::parse` made (the config parsed once).
pub fn access_of(path: &Path, root: &Value, index: usize) -> Result<Access, FetchError> {
    let file = path.display();
    let base = format!("offerings[{index}]");
    let off = root.get("offerings").and_then(|o| o.get(index)).ok_or_else(|| {
        FetchError::new(format!("`{file}` has no `{base}`"), "point --config at the site agent's config")
    })?;
    let string = |key: &str| off.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let token = match off.get("waldur_api_token") {
        Some(Value::String(s)) if !s.trim().is_empty() => Token::new(s.trim().to_string()).ok_or_else(|| {
            FetchError::new(
                format!("`{file}`: `{base}.waldur_api_token` has spaces or control characters (not shown)"),
                "copy the token again from Waldur (user profile -> API token)",
            )
        })?,
        _ => {
            return Err(FetchError::new(
                format!("`{file}`: `{base}.waldur_api_token` is missing or empty"),
                "slurmplan authenticates with the static API token only (OIDC client credentials are not supported); set waldur_api_token",
            ));
        }
    };
    if let Some(Value::Number(n)) = off.get("waldur_offering_uuid") {
        // All digits (or digits with one `e`) is a number to YAML, and leading zeros are gone.
        return Err(FetchError::new(
            format!("`{file}`: `{base}.waldur_offering_uuid` is the number {n} to YAML, not a UUID"),
            "put the UUID in quotes: `waldur_offering_uuid: \"...\"`",
        ));
    }
    let offering_uuid = string("waldur_offering_uuid").ok_or_else(|| {
        FetchError::new(
            format!("`{file}`: `{base}.waldur_offering_uuid` is missing"),
            "copy the offering's UUID from Waldur (offering details page)",
        )
    })?;
    if !is_uuid(offering_uuid) {
        return Err(FetchError::new(
            format!("`{file}`: `{base}.waldur_offering_uuid` `{offering_uuid}` is not a UUID"),
            "copy the offering's UUID from Waldur (32 hex digits)",
        ));
    }
    let url = string("waldur_api_url").ok_or_else(|| {
        FetchError::new(
            format!("`{file}`: `{base}.waldur_api_url` is missing"),
            "set it to the Waldur API root, e.g. `https://waldur.example.org/api/`",
        )
    })?;
    let api = api_root(url).map_err(|why| {
        FetchError::new(
            format!(
                "`{file}`: `{base}.waldur_api_url` `{}` {}",
                token.shown(&without_userinfo(url), 200),
                token.shown(&why, 300)
            ),
            "use `https://HOST/api/` (plain `http://` only to 127.0.0.1, [::1] or localhost)",
        )
    })?;
    let verify_ssl_off = off.get("verify_ssl").and_then(Value::as_bool) == Some(false);
    Ok(Access { api, offering_uuid: offering_uuid.to_string(), token, verify_ssl_off })
}

/// `https://host[:port][/prefix][/api][/]` -> `https://host[:port][/prefix]/api/` (the agent
/// appends `/api/...` to the URL without its `/api`). Parsed by the parser ureq itself uses
/// (`http::Uri`), so the host checked here is the host ureq connects to. No user or password
/// (`USER@HOST`: the part before `@` is not the host). Plain http only to this machine: a
/// loopback IP literal (127.0.0.0/8, `[::1]`) or exactly `localhost`.
fn api_root(url: &str) -> Result<String, String> {
    if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("has a query, fragment or space".into());
    }
    let scheme = match url.split_once("://") {
        Some((s, _)) if s.eq_ignore_ascii_case("https") => "https",
        Some((s, _)) if s.eq_ignore_ascii_case("http") => "http",
        _ => return Err("does not start with https://".into()),
    };
    let uri: ureq::http::Uri = url.parse().map_err(|e: ureq::http::uri::InvalidUri| format!("is not a URL ({e})"))?;
    let Some(authority) = uri.authority().filter(|a| !a.host().is_empty()) else {
        return Err("has no host".into());
    };
    if authority.as_str().contains('@') {
        return Err(format!(
            "has a user name or password before `@`: refused (the request would go to the host `{}`, after the `@`)",
            authority.host()
        ));
    }
    if scheme == "http" && !is_loopback(authority.host()) {
        return Err(format!(
            "is plain http to another host than this machine (`{}`): the API token would cross the network unencrypted",
            authority.host()
        ));
    }
    let mut root = format!("{scheme}://{authority}{}", uri.path()).trim_end_matches('/').to_string();
    if root.len() > format!("{scheme}://{authority}").len() && root.ends_with("/api") {
        root.truncate(root.len() - "/api".len());
    }
    Ok(format!("{root}/api/"))
}

/// 127.0.0.0/8 and `[::1]` as IP literals, or exactly `localhost`.
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
            .is_some_and(|a| a.is_loopback())
}

/// A URL as a message may show it: what stands before an `@` in its authority (a user and
/// password) replaced by `<userinfo>`.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://<userinfo>{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// The proxy the requests to `api` go through, from the environment (`var` reads it):
///
/// - plain http (this machine only): none, whatever the environment says; a proxy would read
///   the token.
/// - https: the first non-empty of `https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`
///   (`http_proxy`/`HTTP_PROXY` are for http URLs, as curl reads them), unless `no_proxy` (or
///   `NO_PROXY`) names the host: `*`, the host, or a domain it is in (`example.org` and
///   `.example.org` both match `waldur.example.org`). Only `http://` and `https://` proxies: ureq
///   reaches the server through them with `CONNECT HOST:PORT` (the request's headers are not in
///   it), and TLS runs end to end inside the tunnel, so the token stays inside TLS. A SOCKS
///   proxy or a value that is not a URL is an error (ureq would skip it silently).
///
/// ureq's own default (`Proxy::try_from_env`) takes the first of `ALL_PROXY`, ..., `HTTP_PROXY`
/// for every request, plain http included; it is never used.
pub fn proxy_for(api: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Option<ureq::Proxy>, FetchError> {
    let uri: ureq::http::Uri = api.parse().map_err(|_| FetchError::new(format!("`{api}` is not a URL"), ""))?;
    if uri.scheme_str() != Some("https") {
        return Ok(None);
    }
    let get = |name: &str| var(name).filter(|v| !v.trim().is_empty()).map(|v| (name.to_string(), v));
    let Some((name, value)) = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].iter().find_map(|n| get(n))
    else {
        return Ok(None);
    };
    let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if let Some((_, no_proxy)) = get("no_proxy").or_else(|| get("NO_PROXY")) {
        let skip = no_proxy.split(',').map(|e| e.trim().to_ascii_lowercase()).any(|e| {
            let domain = e.trim_start_matches("*.").trim_start_matches('.');
            e == "*" || !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
        });
        if skip {
            return Ok(None);
        }
    }
    let hint = "set it to an http(s) proxy, `http://HOST:PORT` (it tunnels TLS with CONNECT), or unset it";
    let proxy = ureq::Proxy::new(value.trim()).map_err(|_| {
        // The value may hold the proxy's password: it is not shown.
        FetchError::new(format!("`{name}` is not a proxy URL (its value is not shown)"), hint)
    })?;
    if !matches!(proxy.protocol(), ureq::ProxyProtocol::Http | ureq::ProxyProtocol::Https) {
        return Err(FetchError::new(
            format!(
                "`{name}` is a {:?} proxy; slurmplan reaches Waldur only through http(s) CONNECT proxies",
                proxy.protocol()
            ),
            hint,
        ));
    }
    Ok(Some(proxy))
}

/// 32 hex digits, dashes allowed (both forms name the same Waldur object).
fn is_uuid(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_hexdigit() || c == '-') && norm_uuid(s).len() == 32
}

/// How to talk to the API.
#[derive(Debug, Clone)]
pub struct Options {
    /// Per request, from connect to the last byte of the body.
    pub timeout: Duration,
    /// Tries per request (1 = no retry).
    pub attempts: u32,
    /// Wait before the first retry; doubled each time, at most 60 s (a `Retry-After` of the
    /// server up to 60 s wins).
    pub backoff: Duration,
    /// Items per page (Waldur allows up to 300).
    pub page_size: u32,
    /// PEM file of the CA(s) to trust instead of Mozilla's roots.
    pub ca_cert: Option<PathBuf>,
    /// Team requests in flight at once (at least 1).
    pub jobs: usize,
    /// Pages read of one list at most ([`MAX_PAGES`]; the cli never changes it).
    pub max_pages: u32,
}

/// The most pages of one list a fetch reads: 10,000 pages of 100 (the default `--page-size`)
/// are a million items, far beyond any offering; a server that goes on is refused.
pub const MAX_PAGES: u32 = 10_000;

/// Reported while fetching (the cli draws it).
#[derive(Debug, Clone, PartialEq)]
pub enum Progress<'a> {
    /// One page of a list arrived.
    Page { list: &'a str, page: u32, received: usize, total: Option<u64> },
    /// Teams fetched so far.
    Teams { done: usize, total: usize },
    /// A request failed in a way worth retrying; it is sent again after `wait`.
    Retry { url: &'a str, reason: &'a str, attempt: u32, attempts: u32, wait: Duration },
}

/// What a fetch got.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub resources: usize,
    pub resource_pages: u32,
    pub teams: usize,
    pub members: usize,
    pub offering_users: usize,
    pub requests: usize,
    pub bytes: u64,
}

/// Largest response body accepted (a page of 300 full resources is a few MB).
const BODY_LIMIT: u64 = 256 << 20;
/// The retry back-off never waits longer than this.
const MAX_WAIT: Duration = Duration::from_secs(60);
const USER_AGENT: &str = concat!("slurmplan/", env!("CARGO_PKG_VERSION"));

/// One received page.
struct Page {
    body: Vec<u8>,
    items: Vec<Value>,
    next_page: Option<u32>,
    total: Option<u64>,
}

/// Why one try failed.
enum Failed {
    /// Worth another try (5xx, timeout, cut-off body).
    Again {
        reason: String,
        wait: Option<Duration>,
    },
    Fatal(FetchError),
}

struct Client<'a> {
    agent: ureq::Agent,
    access: &'a Access,
    opts: &'a Options,
    summary: Summary,
}

/// The directory a fetch writes its pages into (existing and empty; see [`staging_dir`]).
/// [`PageDir::abandon`] removes it, from any thread (the cli's, on SIGINT/SIGTERM, while the
/// fetch is still waiting for a server), and makes every later write fail: no page lands in it
/// once it is gone.
#[derive(Debug)]
pub struct PageDir {
    path: PathBuf,
    open: std::sync::Mutex<bool>,
}

impl PageDir {
    pub fn new(path: PathBuf) -> PageDir {
        PageDir { path, open: std::sync::Mutex::new(true) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), FetchError> {
        let open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let file = self.path.join(name);
        if !*open {
            return Err(FetchError::new(
                format!("`{}` was abandoned; nothing more is written", self.path.display()),
                "",
            ));
        }
        // Created new (never through a link or over a file) and synced: the export is renamed
        // into place only when every page is on disk (`replace_dir`).
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&file)
            .and_then(|mut f| {
                f.write_all(bytes)?;
                f.sync_all()
            });
        written.map_err(|e| {
            FetchError::new(
                format!("cannot write `{}`", file.display()),
                "check the space and permissions of the export directory's parent",
            )
            .cause(e.to_string())
        })
    }

    /// Stop every later write and remove the directory with what it holds.
    pub fn abandon(&self) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *open = false;
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }
}

/// Fetch the offering's export into `dir`. On error `dir` holds whatever arrived before it;
/// the caller discards it.
pub fn fetch(
    access: &Access,
    opts: &Options,
    dir: &PageDir,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Summary, FetchError> {
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(path) = &opts.ca_cert {
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&read_ca(path)?));
    }
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(opts.timeout))
        .user_agent(USER_AGENT)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .proxy(proxy_for(&access.api, &|name| std::env::var(name).ok())?)
        .tls_config(tls.build())
        .build();
    let mut c = Client { agent: config.into(), access, opts, summary: Summary::default() };
    let u = &access.offering_uuid;
    let states: String = LIVE_STATES.iter().map(|s| format!("&state={s}")).collect();
    let (resources, pages) = c.list(
        "resources",
        &format!("marketplace-provider-resources/?offering_uuid={u}{states}"),
        dir,
        "resources",
        progress,
    )?;
    c.summary.resources = resources.len();
    c.summary.resource_pages = pages;
    let mut live = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        let uuid = r.get("uuid").and_then(Value::as_str).unwrap_or("");
        if !is_uuid(uuid) {
            return Err(FetchError::new(
                format!("resource #{} of the offering has no valid `uuid` (`{}`)", i + 1, access.token.shown(uuid, 80)),
                "the API returned something that is not a marketplace resource; check waldur_api_url",
            ));
        }
        if r.get("state").and_then(Value::as_str).is_some_and(|s| LIVE_STATES.contains(&s)) {
            live.push(uuid.to_string());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = live.iter().find(|u| !seen.insert(norm_uuid(u))) {
        return Err(FetchError::new(
            format!("resource `{dup}` arrived twice while paging"),
            "resources were created or removed during the fetch; run it again",
        ));
    }
    progress(Progress::Teams { done: 0, total: live.len() });
    let teams = fetch_teams(&c.agent, access, opts, dir, &live, progress)?;
    c.summary.members += teams.members;
    c.summary.requests += teams.requests;
    c.summary.bytes += teams.bytes;
    c.summary.teams = live.len();
    progress(Progress::Teams { done: live.len(), total: live.len() });
    let (users, _) = c.list(
        "offering users",
        &format!("marketplace-offering-users/?offering_uuid={u}"),
        dir,
        "offering-users",
        progress,
    )?;
    c.summary.offering_users = users.len();
    Ok(c.summary)
}

/// The team of each resource in `live`, on `opts.jobs` connections at once (a site with
/// thousands of allocations makes one request per allocation). The first error stops the
/// others from starting new requests and is returned.
fn fetch_teams(
    agent: &ureq::Agent,
    access: &Access,
    opts: &Options,
    dir: &PageDir,
    live: &[String],
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Summary, FetchError> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let progress = Mutex::new(progress);
    let report = |p: Progress<'_>| {
        if let Ok(mut f) = progress.lock() {
            f(p)
        }
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let error: Mutex<Option<FetchError>> = Mutex::new(None);
    let failed = || error.lock().map_or(true, |e| e.is_some());
    let mut total = Summary::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..opts.jobs.clamp(1, live.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut c = Client { agent: agent.clone(), access, opts, summary: Summary::default() };
                    while !failed() {
                        let Some(uuid) = live.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                        let got = c.list(
                            "team",
                            &format!("marketplace-provider-resources/{uuid}/team/?"),
                            dir,
                            &format!("team-{uuid}"),
                            // a team's pages are not worth a line each; its retries are
                            &mut |p| {
                                if matches!(p, Progress::Retry { .. }) {
                                    report(p)
                                }
                            },
                        );
                        match got {
                            Ok((team, _)) => {
                                c.summary.members += team.len();
                                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                                report(Progress::Teams { done: d, total: live.len() });
                            }
                            Err(e) => {
                                if let Ok(mut first) = error.lock() {
                                    first.get_or_insert(e);
                                }
                                break;
                            }
                        }
                    }
                    c.summary
                })
            })
            .collect();
        for w in workers {
            let s = w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            total.members += s.members;
            total.requests += s.requests;
            total.bytes += s.bytes;
        }
    });
    match error.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

fn read_ca(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, FetchError> {
    let text = slurmplan_input::read(path).map_err(|e| {
        FetchError::new(
            format!("cannot read the CA file `{}`", path.display()),
            "pass --ca-cert FILE with the PEM certificate of your CA",
        )
        .cause(e.to_string())
    })?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&text) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(FetchError::new(
                    format!("`{}` is not a PEM file", path.display()),
                    "pass the CA certificate in PEM form (-----BEGIN CERTIFICATE-----)",
                )
                .cause(e.to_string()));
            }
        }
    }
    if certs.is_empty() {
        return Err(FetchError::new(
            format!("`{}` holds no certificate", path.display()),
            "pass the CA certificate in PEM form (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(certs)
}

impl Client<'_> {
    /// Every page of one list endpoint (`path` ends in `?` or carries a query), each written to
    /// `dir/<prefix>-<page>.json`. The total announced by the first page must match what arrived.
    /// Bounded: an empty page ends the list; a list goes on for at most `ceil(total / items of
    /// page 1) + 1` pages when the server announces its total, never more than
    /// `opts.max_pages`, and never brings more items than announced.
    fn list(
        &mut self,
        list: &str,
        path: &str,
        dir: &PageDir,
        prefix: &str,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<(Vec<Value>, u32), FetchError> {
        let sep = if path.ends_with('?') { "" } else { "&" };
        let mut all = Vec::new();
        let mut page = 1u32;
        let mut total = None;
        let mut first_page_items = 0;
        let not_waldur = "the server does not paginate like Waldur; check waldur_api_url";
        loop {
            let url = format!("{}{path}{sep}page={page}&page_size={}", self.access.api, self.opts.page_size);
            let p = self.get(&url, progress)?;
            if page == 1 {
                total = p.total;
                first_page_items = p.items.len();
            } else if p.total != total {
                return Err(FetchError::new(
                    format!(
                        "the {list} list changed while paging (`X-Result-Count` {} on page 1, {} on page {page})",
                        shown(total),
                        shown(p.total)
                    ),
                    "run the fetch again",
                ));
            }
            if let Some(t) = total
                && (all.len() + p.items.len()) as u64 > t
            {
                return Err(FetchError::new(
                    format!(
                        "GET {url}: the {list} list announced {t} item(s) (`X-Result-Count`) but {} arrived by page {page}",
                        all.len() + p.items.len()
                    ),
                    not_waldur,
                ));
            }
            dir.write(&format!("{prefix}-{page:05}.json"), &p.body)?;
            let empty = p.items.is_empty();
            all.extend(p.items);
            progress(Progress::Page { list, page, received: all.len(), total });
            match p.next_page {
                None => break,
                // an empty page ends the list, whatever its `Link` says
                Some(_) if empty => break,
                Some(n) if n == page + 1 => {
                    if let Some(t) = total {
                        let most = t.div_ceil(first_page_items.max(1) as u64) + 1;
                        if u64::from(page) >= most {
                            return Err(FetchError::new(
                                format!(
                                    "GET {url}: page {page} links to a next page, but {t} item(s) (`X-Result-Count`) at {first_page_items} a page make at most {most} page(s)"
                                ),
                                not_waldur,
                            ));
                        }
                    }
                    if page >= self.opts.max_pages {
                        return Err(FetchError::new(
                            format!(
                                "GET {url}: the {list} list goes on past {} pages, the most slurmplan reads of one list",
                                self.opts.max_pages
                            ),
                            "pass a larger --page-size (up to 300), or check waldur_api_url",
                        ));
                    }
                    page = n;
                }
                Some(n) => {
                    return Err(FetchError::new(
                        format!("GET {url}: the `Link` header's next page is {n}, not {}", page + 1),
                        not_waldur,
                    ));
                }
            }
        }
        if let Some(t) = total
            && t != all.len() as u64
        {
            return Err(FetchError::new(
                format!("the {list} list announced {t} item(s) (`X-Result-Count`) but {} arrived", all.len()),
                "the list changed during the fetch, or a proxy cut it short; run the fetch again",
            ));
        }
        Ok((all, page))
    }

    /// One GET with the bounded retry.
    fn get(&mut self, url: &str, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Page, FetchError> {
        let mut wait = self.opts.backoff;
        let mut attempt = 1;
        loop {
            self.summary.requests += 1;
            match self.try_get(url) {
                Ok(p) => {
                    self.summary.bytes += p.body.len() as u64;
                    return Ok(p);
                }
                Err(Failed::Fatal(e)) => return Err(e),
                Err(Failed::Again { reason, wait: asked }) => {
                    if attempt >= self.opts.attempts {
                        return Err(FetchError::new(
                            format!("GET {url} failed {attempt} time(s)"),
                            "the Waldur API is unreachable or failing; try again later (earlier exports are left as they were)",
                        )
                        .cause(reason));
                    }
                    let w = asked.unwrap_or(wait).min(MAX_WAIT);
                    progress(Progress::Retry { url, reason: &reason, attempt, attempts: self.opts.attempts, wait: w });
                    std::thread::sleep(w);
                    wait = (wait * 2).min(MAX_WAIT);
                    attempt += 1;
                }
            }
        }
    }

    fn try_get(&self, url: &str) -> Result<Page, Failed> {
        let token = &self.access.token;
        let mut resp = match self
            .agent
            .get(url)
            .header("Authorization", format!("Token {}", token.0))
            .header("Accept", "application/json")
            .call()
        {
            Ok(r) => r,
            Err(e) => return Err(transport(url, e, token)),
        };
        let status = resp.status().as_u16();
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let link = header("link");
        let count = header("x-result-count");
        let retry_after = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
        let body = resp.body_mut().with_config().limit(BODY_LIMIT).read_to_vec();
        if status != 200 {
            let detail = body.as_deref().map(|b| detail(b, token)).unwrap_or_default();
            let reason = format!("HTTP {status}{detail}");
            if status >= 500 || status == 408 || status == 429 {
                return Err(Failed::Again { reason, wait: retry_after });
            }
            let hint = match status {
                401 | 403 => "check `waldur_api_token` of the offering in the agent config (it is not shown); the token's user must manage the offering".to_string(),
                404 => "check `waldur_api_url` and `waldur_offering_uuid` in the agent config".to_string(),
                300..=399 => "`waldur_api_url` is redirected; put the final https URL in the agent config".to_string(),
                _ => "check the agent config's waldur_api_url; see docs/waldur.md".to_string(),
            };
            return Err(Failed::Fatal(FetchError::new(format!("GET {url}: {reason}"), hint)));
        }
        let body = match body {
            Ok(b) => b,
            Err(e) => {
                return Err(Failed::Again {
                    reason: format!("the body was cut off: {}", token.shown(&e.to_string(), 300)),
                    wait: None,
                });
            }
        };
        let items = match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Array(items)) => items,
            Ok(_) => {
                return Err(Failed::Fatal(FetchError::new(
                    format!("GET {url}: the body is not a JSON list{}", detail(&body, token)),
                    "waldur_api_url must be the API root (`https://HOST/api/`)",
                )));
            }
            Err(e) if e.is_eof() => {
                return Err(Failed::Again {
                    reason: format!("the body ends in the middle of the JSON ({} bytes)", body.len()),
                    wait: None,
                });
            }
            Err(e) => {
                return Err(Failed::Fatal(
                    FetchError::new(
                        format!("GET {url}: the body is not JSON{}", detail(&body, token)),
                        "waldur_api_url must be the API root (`https://HOST/api/`), not the web portal",
                    )
                    .cause(e.to_string()),
                ));
            }
        };
        let total = match count {
            None => None,
            Some(c) => match c.trim().parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    return Err(Failed::Fatal(FetchError::new(
                        format!("GET {url}: `X-Result-Count` is `{}`, not a number", token.shown(&c, 40)),
                        "the server does not paginate like Waldur; check waldur_api_url",
                    )));
                }
            },
        };
        let next_page = match link.as_deref().and_then(next_link) {
            None => None,
            Some(next) => match page_of(next) {
                Some(n) => Some(n),
                None => {
                    return Err(Failed::Fatal(FetchError::new(
                        format!("GET {url}: the `Link` header's next URL has no page number"),
                        "the server does not paginate like Waldur; check waldur_api_url",
                    )));
                }
            },
        };
        // A page is written as it came and its values end up in messages and the desired file:
        // one that quotes the token back (a server echoing what it was sent) is not kept.
        if std::str::from_utf8(&body).is_ok_and(|text| token.forms().iter().any(|f| text.contains(f.as_str()))) {
            return Err(Failed::Fatal(FetchError::new(
                format!("GET {url}: the response holds the API token; it is not written"),
                "the server quotes the credentials it was sent; check that waldur_api_url is the Waldur API",
            )));
        }
        Ok(Page { body, items, next_page, total })
    }
}

fn shown(n: Option<u64>) -> String {
    n.map_or_else(|| "absent".to_string(), |n| n.to_string())
}

/// A transport error: retried unless it is about TLS or the URL (those need a fix, not a wait).
/// rustls's refusals (an unknown issuer, a wrong name) arrive as I/O errors of kind InvalidData.
fn transport(url: &str, e: ureq::Error, token: &Token) -> Failed {
    let text = token.shown(&e.to_string(), 300);
    let tls_io = matches!(&e, ureq::Error::Io(io) if io.kind() == io::ErrorKind::InvalidData);
    match e {
        _ if tls_io => Failed::Fatal(
            FetchError::new(
                format!("GET {url}: TLS failed"),
                "for a private CA pass --ca-cert FILE (PEM); the certificate is always verified",
            )
            .cause(text),
        ),
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => Failed::Fatal(
            FetchError::new(
                format!("GET {url}: TLS failed"),
                "for a private CA pass --ca-cert FILE (PEM); the certificate is always verified",
            )
            .cause(text),
        ),
        ureq::Error::BadUri(_) | ureq::Error::Http(_) => Failed::Fatal(
            FetchError::new(format!("GET {url}: bad request"), "check waldur_api_url in the agent config").cause(text),
        ),
        _ => Failed::Again { reason: text, wait: None },
    }
}

/// `: <detail>` from an error body (`{"detail": "..."}` as DRF sends it, else the body) as
/// [`Token::shown`] shows it: on one line, scrubbed of the token, then cut after 200 characters.
fn detail(body: &[u8], token: &Token) -> String {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => match m.get("detail") {
            Some(Value::String(d)) => d.clone(),
            _ => Value::Object(m).to_string(),
        },
        Ok(v) => v.to_string(),
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(SCANNED)]).into_owned(),
    };
    let shown = token.shown(&text, 200);
    if shown.is_empty() { String::new() } else { format!(": {shown}") }
}

/// The `rel="next"` URL of a `Link` header (`<url>; rel="next", <url>; rel="last"`).
fn next_link(header: &str) -> Option<&str> {
    header.split(',').find_map(|part| {
        let (url, params) = part.trim().split_once(';')?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|p| p.trim().strip_prefix("rel=").is_some_and(|r| r.trim_matches(['"', '\'']) == "next"))
            .then_some(url)
    })
}

/// The `page=` of a URL's query.
fn page_of(url: &str) -> Option<u32> {
    let query = url.split_once('?')?.1.split('#').next()?;
    query.split('&').find_map(|kv| kv.strip_prefix("page=")).and_then(|v| v.parse().ok())
}

/// A new, empty sibling of `target` to fetch into (`.NAME.partial-PID`, mode 0700). An existing
/// `target` must be a directory holding only export files, so that replacing it loses nothing.
pub fn staging_dir(target: &Path) -> Result<PathBuf, FetchError> {
    let name = target.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        FetchError::new(
            format!("`{}` does not name a directory", target.display()),
            "pass --out DIR (e.g. /var/lib/slurmplan/waldur-export)",
        )
    })?;
    check_replaceable(target)?;
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staged = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let cant = |e: io::Error| {
        FetchError::new(
            format!("cannot create `{}`", staged.display()),
            "the export is written next to the target first; check that its parent directory exists and is writable",
        )
        .cause(e.to_string())
    };
    if staged.exists() {
        std::fs::remove_dir_all(&staged).map_err(cant)?;
    }
    create_private_dir(&staged).map_err(cant)?;
    Ok(staged)
}

/// Create a directory only its owner can enter.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

/// Whether a file name is one of an export's pages.
fn is_export_file(name: &str) -> bool {
    name.ends_with(".json")
        && (name.starts_with("resources") || name.starts_with("team-") || name.starts_with("offering-users"))
}

fn check_replaceable(target: &Path) -> Result<(), FetchError> {
    let entries = match std::fs::read_dir(target) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(FetchError::new(
                format!("`{}` exists but cannot be read as a directory", target.display()),
                "pass --out a new directory or an earlier export",
            )
            .cause(e.to_string()));
        }
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !is_export_file(&name) || !e.file_type().is_ok_and(|t| t.is_file()) {
            return Err(FetchError::new(
                format!(
                    "`{}` holds `{name}`, which is not part of a Waldur export; it is not replaced",
                    target.display()
                ),
                "pass --out a new directory or an earlier export (it is replaced as a whole)",
            ));
        }
    }
    Ok(())
}

/// Put the finished `staged` directory at `target` in one step: swapped with an existing one
/// (`renameat2(RENAME_EXCHANGE)`), which is then deleted; renamed when there is none.
pub fn replace_dir(staged: &Path, target: &Path) -> Result<(), FetchError> {
    let cant = |e: io::Error| {
        FetchError::new(
            format!("cannot move the new export into `{}`", target.display()),
            format!("the fetched pages are in `{}`", staged.display()),
        )
        .cause(e.to_string())
    };
    check_replaceable(target)?;
    slurmplan_output::sync_dir(staged).map_err(cant)?;
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !target.exists() {
        std::fs::rename(staged, target).map_err(cant)?;
        return slurmplan_output::sync_dir(parent).map_err(cant);
    }
    match rustix::fs::renameat_with(rustix::fs::CWD, staged, rustix::fs::CWD, target, rustix::fs::RenameFlags::EXCHANGE)
    {
        Ok(()) => {}
        // A file system without the exchange: move the old one aside first (a short moment
        // without `target`, never a mixed one).
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::NOTSUP) => {
            let aside = staged.with_extension("old");
            std::fs::rename(target, &aside).map_err(cant)?;
            if let Err(e) = std::fs::rename(staged, target) {
                let _ = std::fs::rename(&aside, target);
                return Err(cant(e));
            }
            let _ = std::fs::remove_dir_all(&aside);
            return slurmplan_output::sync_dir(parent).map_err(cant);
        }
        Err(e) => return Err(cant(e.into())),
    }
    slurmplan_output::sync_dir(parent).map_err(cant)?;
    // `staged` now holds the previous export.
    std::fs::remove_dir_all(staged).map_err(|e| {
        FetchError::new(
            format!(
                "the new export is in `{}`, but the previous one could not be removed from `{}`",
                target.display(),
                staged.display()
            ),
            "remove it by hand",
        )
        .cause(e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_redacted_in_debug_and_display() {
        let t = Token::new("s3cr3t-TOKEN".into()).unwrap();
        assert_eq!(format!("{t}"), "<redacted>");
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        let a = Access { api: "https://w/api/".into(), offering_uuid: "u".into(), token: t, verify_ssl_off: false };
        assert!(!format!("{a:?}").contains("s3cr3t"));
        assert_eq!(a.token.scrub("x s3cr3t-TOKEN y"), "x <redacted> y");
        assert!(Token::new("has space".into()).is_none());
        assert!(Token::new("line\nbreak".into()).is_none());
        assert!(Token::new(String::new()).is_none());
    }

    #[test]
    fn api_root_accepts_the_agent_forms_and_refuses_plain_http_elsewhere() {
        for (url, want) in [
            ("https://waldur.example.org/api/", "https://waldur.example.org/api/"),
            ("https://waldur.example.org/api", "https://waldur.example.org/api/"),
            ("https://waldur.example.org", "https://waldur.example.org/api/"),
            ("https://waldur.example.org/", "https://waldur.example.org/api/"),
            ("https://h:8443/waldur/api/", "https://h:8443/waldur/api/"),
            ("http://localhost:8081/api/", "http://localhost:8081/api/"),
            ("http://127.0.0.1:9/api/", "http://127.0.0.1:9/api/"),
            ("http://[::1]:9/api/", "http://[::1]:9/api/"),
        ] {
            assert_eq!(api_root(url).as_deref(), Ok(want), "{url}");
        }
        for url in [
            "http://waldur.example.org/api/",
            "ftp://x/api/",
            "https:///api/",
            "https://h/api/?x=1",
            "waldur.example.org",
            // hosts that are not this machine, dressed up as it
            "http://127.0.0.1@evil.example/api/",
            "http://localhost:1@evil.example/api/",
            "http://127.evil.example/api/",
            "http://localhost.evil.example/api/",
            "http://localhost./api/",
            "http://127.1/api/",
            "http://2130706433/api/",
            "http://0x7f.0.0.1/api/",
            "http://[::ffff:7f00:1]/api/",
            "http://%31%32%37.0.0.1/api/",
            // a user or password is refused on https too
            "https://user:pass@waldur.example.org/api/",
            "https://@waldur.example.org/api/",
        ] {
            assert!(api_root(url).is_err(), "{url}");
        }
        assert!(api_root("http://127.0.0.1@evil.example/api/").unwrap_err().contains("`evil.example`"));
        assert_eq!(api_root("http://127.200.3.4:80/api").as_deref(), Ok("http://127.200.3.4:80/api/"));
        assert_eq!(without_userinfo("https://u:secret@h.example/api/"), "https://<userinfo>@h.example/api/");
        assert_eq!(without_userinfo("https://h.example/a@b/"), "https://h.example/a@b/");
    }

    #[test]
    fn proxies_only_for_https_and_only_http_connect_ones() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let all: &[(&str, &str)] = &[
            ("ALL_PROXY", "http://all.example:3128"),
            ("HTTP_PROXY", "http://plain.example:3128"),
            ("http_proxy", "http://plain.example:3128"),
            ("HTTPS_PROXY", "http://tls.example:3128"),
        ];
        // plain http (loopback only) never goes through a proxy
        for api in ["http://127.0.0.1:9/api/", "http://localhost/api/", "http://[::1]/api/"] {
            assert!(proxy_for(api, &env(all)).unwrap().is_none(), "{api}");
        }
        let host = |p: Option<ureq::Proxy>| p.map(|p| p.host().to_string());
        assert_eq!(host(proxy_for("https://w.example/api/", &env(all)).unwrap()).as_deref(), Some("tls.example"));
        let no_https: &[(&str, &str)] = &[("all_proxy", "all.example:8080"), ("HTTP_PROXY", "http://plain.example")];
        assert_eq!(host(proxy_for("https://w.example/api/", &env(no_https)).unwrap()).as_deref(), Some("all.example"));
        // http_proxy is for http URLs; an empty value is no value
        let http_only: &[(&str, &str)] = &[("HTTP_PROXY", "http://plain.example"), ("HTTPS_PROXY", " ")];
        assert!(proxy_for("https://w.example/api/", &env(http_only)).unwrap().is_none());
        for no_proxy in ["*", "w.example", ".example", "other.org, example", "*.example"] {
            let vars: &'static [(&'static str, &'static str)] =
                Box::leak(vec![("HTTPS_PROXY", "http://tls.example"), ("NO_PROXY", no_proxy)].into_boxed_slice());
            assert!(proxy_for("https://w.example/api/", &env(vars)).unwrap().is_none(), "{no_proxy}");
        }
        let elsewhere: &[(&str, &str)] = &[("HTTPS_PROXY", "http://tls.example"), ("no_proxy", "ample,w.example.org")];
        assert!(proxy_for("https://w.example/api/", &env(elsewhere)).unwrap().is_some());
        let socks: &[(&str, &str)] = &[("ALL_PROXY", "socks5://u:pw@s.example:1080")];
        let e = proxy_for("https://w.example/api/", &env(socks)).unwrap_err();
        assert!(e.message.contains("`ALL_PROXY` is a Socks5 proxy"), "{e:?}");
        let bad: &[(&str, &str)] = &[("https_proxy", "http://u:pw@[x/")];
        let e = proxy_for("https://w.example/api/", &env(bad)).unwrap_err();
        assert!(e.message.contains("`https_proxy` is not a proxy URL") && !e.message.contains("pw"), "{e:?}");
    }

    #[test]
    fn link_header_next_page() {
        let h = r#"<https://w/api/x/?offering_uuid=u>; rel="first", <https://w/api/x/?offering_uuid=u&page=3&page_size=2>; rel="next", <https://w/api/x/?page=9>; rel="last""#;
        assert_eq!(next_link(h).and_then(page_of), Some(3));
        assert_eq!(next_link(r#"<https://w/api/x/?page=1>; rel="first""#), None);
        assert_eq!(next_link(""), None);
        assert_eq!(page_of("https://w/api/x/?page_size=2"), None);
    }

    #[test]
    fn detail_prefers_the_api_message_and_scrubs_the_token() {
        let t = Token::new("tok123".into()).unwrap();
        assert_eq!(detail(br#"{"detail": "Invalid token."}"#, &t), ": Invalid token.");
        assert_eq!(
            detail(b"<html>\n<b>Bad gateway</b> tok123</html>", &t),
            ": <html> <b>Bad gateway</b> <redacted></html>"
        );
        assert_eq!(detail(b"", &t), "");
        assert!(detail(&[b'x'; 500], &t).ends_with("..."));
        assert_eq!(detail(b"a\x1b[31mred\r\n\x07b", &t), ": a\\u{1b}[31mred \\u{7}b");
    }

    /// A local server whose page `n` (1, 2, ...) is `page(n)`: a body and an optional
    /// `X-Result-Count`, always with a `rel="next"` link. Returns the API root and the count of
    /// requests served.
    fn endless(page: fn(usize) -> (String, Option<u64>)) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = served.clone();
        std::thread::spawn(move || {
            for req in server.incoming_requests() {
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                let (body, total) = page(n);
                let link = format!("<http://127.0.0.1:{port}/api/x/?page={}>; rel=\"next\"", n + 1);
                let mut resp = tiny_http::Response::from_string(body)
                    .with_header(tiny_http::Header::from_bytes("Link", link).unwrap());
                if let Some(t) = total {
                    resp.add_header(tiny_http::Header::from_bytes("X-Result-Count", t.to_string()).unwrap());
                }
                let _ = req.respond(resp);
                if n > 50 {
                    break;
                }
            }
        });
        (format!("http://127.0.0.1:{port}/api/"), served)
    }

    fn fetch_from(api: String, page_size: u32, max_pages: u32) -> (FetchError, usize) {
        let tmp = tempfile::tempdir().unwrap();
        let access = Access {
            api,
            offering_uuid: "0123456789abcdef0123456789abcdef".into(),
            token: Token::new("tok".into()).unwrap(),
            verify_ssl_off: false,
        };
        let opts = Options {
            timeout: Duration::from_secs(10),
            attempts: 1,
            backoff: Duration::from_secs(1),
            page_size,
            ca_cert: None,
            jobs: 1,
            max_pages,
        };
        let e = fetch(&access, &opts, &PageDir::new(tmp.path().into()), &mut |_| {}).unwrap_err();
        (e, std::fs::read_dir(tmp.path()).unwrap().count())
    }

    const ITEM: &str = r#"{"uuid": "0123456789abcdef0123456789abcdef"}"#;

    #[test]
    fn a_list_that_never_ends_stops_at_max_pages() {
        // no `X-Result-Count`, every page full and linking to the next one
        let (api, served) = endless(|_| (format!("[{ITEM}]"), None));
        let (e, files) = fetch_from(api, 1, 5);
        assert!(e.message.contains("marketplace-provider-resources/?"), "{e:?}");
        assert!(e.message.contains("page=5&page_size=1: the resources list goes on past 5 pages"), "{e:?}");
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 5);
        assert_eq!(files, 5);
    }

    #[test]
    fn a_list_goes_on_for_no_more_pages_than_its_total_needs() {
        // 10 announced, 5 on page 1, then one a page: at most ceil(10 / 5) + 1 = 3 pages
        let (api, served) = endless(|n| {
            let items = if n == 1 { 5 } else { 1 };
            (format!("[{}]", vec![ITEM; items].join(",")), Some(10))
        });
        let (e, _) = fetch_from(api, 5, MAX_PAGES);
        assert!(
            e.message.contains("page=3&page_size=5: page 3 links to a next page, but 10 item(s) (`X-Result-Count`) at 5 a page make at most 3 page(s)"),
            "{e:?}"
        );
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    /// Whether `shown` holds the token or any run of 8 of its characters.
    fn leaks(shown: &str, token: &str) -> Option<String> {
        let lower = shown.to_ascii_lowercase();
        (0..=token.len() - 8).map(|i| token[i..i + 8].to_ascii_lowercase()).find(|piece| lower.contains(piece.as_str()))
    }

    #[test]
    fn server_text_is_scrubbed_before_it_is_cut_at_every_offset() {
        let raw = "2f0c1d7e9b8a4c3db6e5f4a3c2b1d0e9f8a7b6c5";
        let odd = "ab/cd+ef=gh\\ij\"kl%mn";
        for secret in [raw, odd] {
            let t = Token::new(secret.to_string()).unwrap();
            let percent: String = secret
                .bytes()
                .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02x}") })
                .collect();
            let json = serde_json::to_string(secret).unwrap();
            let json = json.trim_matches('"');
            let quoted = [secret.to_string(), percent.clone(), json.to_string()];
            let leaks = |shown: &str| quoted.iter().find_map(|q| leaks(shown, q));
            let forms = [
                format!("Token {secret}"),
                secret.to_string(),
                secret.to_ascii_uppercase(),
                percent,
                json.to_string(),
                json.replace('/', "\\/"),
                // a server that cuts the header it quotes
                format!("Token {}", &secret[..20]),
                format!("{}...", &secret[..secret.len() - 5]),
            ];
            for form in &forms {
                // the cut is at 200 characters: every offset at which the token straddles it
                for offset in (0..8).chain(140..=210) {
                    let text = format!("{}{form} and more text after it", "x".repeat(offset));
                    for shown in [t.shown(&text, 200), detail(text.as_bytes(), &t)] {
                        assert!(shown.chars().count() <= 205, "{shown}");
                        if let Some(piece) = leaks(&shown) {
                            panic!("offset {offset}, form {form}: `{piece}` shown in {shown}");
                        }
                    }
                    // the same quoted in DRF's `detail`
                    let body = serde_json::json!({ "detail": text }).to_string();
                    let shown = detail(body.as_bytes(), &t);
                    assert!(leaks(&shown).is_none(), "offset {offset}, form {form}: {shown}");
                }
            }
            // text that merely shares short runs with the token is left alone
            assert_eq!(t.shown("Invalid token.", 200), "Invalid token.");
        }
    }

    #[test]
    fn access_reads_url_uuid_and_token_of_the_chosen_offering() {
        let text = "offerings:\n  - name: a\n    waldur_api_url: https://w.example/api/\n    waldur_api_token: tok-A\n    waldur_offering_uuid: 0123456789abcdef0123456789abcdef\n  - name: b\n    waldur_api_url: https://other.example\n    waldur_api_token: tok-B\n    waldur_offering_uuid: aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa\n    verify_ssl: false\n";
        let a = load_access(Path::new("c.yaml"), text, 1).unwrap();
        assert_eq!(a.api, "https://other.example/api/");
        assert_eq!(a.offering_uuid, "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa");
        assert_eq!(a.token.scrub("tok-B"), "<redacted>");
        assert!(a.verify_ssl_off);
        let no_token = text.replace("tok-A", "\"\"");
        let e = load_access(Path::new("c.yaml"), &no_token, 0).unwrap_err();
        assert!(e.message.contains("`offerings[0].waldur_api_token` is missing or empty"), "{e:?}");
        let bad_uuid = text.replace("0123456789abcdef0123456789abcdef", "../../etc");
        assert!(load_access(Path::new("c.yaml"), &bad_uuid, 0).unwrap_err().message.contains("is not a UUID"));
        let digits = text.replace("0123456789abcdef0123456789abcdef", "00000000000000000000000000000001");
        let e = load_access(Path::new("c.yaml"), &digits, 0).unwrap_err();
        assert!(e.message.contains("waldur_offering_uuid` is the number"), "{e:?}");
        assert!(e.hint.contains("quotes"), "{e:?}");
        // Parsed once (`waldur fetch`): the access from the tree `config::parse` made.
        let root = crate::config::parse(Path::new("c.yaml"), text).unwrap();
        let b = access_of(Path::new("c.yaml"), &root, 1).unwrap();
        assert_eq!((b.api, b.offering_uuid), (a.api, a.offering_uuid));
        assert_eq!(b.token.scrub("tok-B"), "<redacted>");
    }
}
