//! [`RestTransport`]: `sacctmgr::transport::Transport` over slurmrestd. Each read of
//! `sacctmgr::reads` becomes one or three `GET /slurmdb/VERSION/...` requests whose JSON
//! [`crate::render`] turns into the text sacctmgr prints; the live reader cannot tell the two
//! transports apart. The data parser VERSION is chosen once, from the paths `GET /openapi/v3`
//! lists: the newest of [`SUPPORTED`] the server offers (v0.0.41 and older do not carry a QoS's
//! GrpSubmitJobs and GrpTRESMins, so Slurm 24.11 is the oldest release slurmplan reads).
//!
//! Security: TLS is always verified (Mozilla's roots, or only `--ca-cert`'s); plain http only
//! to a loopback address (the token would cross the network in clear); no proxy, no redirect;
//! every request has the transport's timeout and every body a size limit; a body whose
//! `errors` or `warnings` are not empty is an error (slurmrestd warns, with a 200, when it
//! ignores a query parameter). The JWT ([`Token`]) has a redacted Debug, is never formatted
//! into a message, and only goes in the `X-SLURM-USER-TOKEN` header; text from a response
//! reaches a message cut and with the token scrubbed out.
//!
//! Writes go only through [`RestTransport::write`], one [`crate::write::Call`] at a time;
//! [`Transport::run`] (a sacctmgr argv) is refused.
//!
//! Must not: print, spawn, or write files.

use std::io::Read as _;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use slurmplan_sacctmgr::reads::{self, Filter, READS, Read};
use slurmplan_sacctmgr::transport::{Output, RunError, Transport};

use crate::render::{self, AccountText, AssocReads, AssocsBody, Envelope, Problem};
use crate::write::{self, Call, RowChange, RowKey};

/// Data parsers slurmplan reads, newest first (verified on Slurm 24.11.5).
pub const SUPPORTED: &[&str] = &["v0.0.42"];

/// Largest body of an association read: a million associations print about 2.5 GB of JSON.
const ASSOC_LIMIT: u64 = 8 << 30;
/// Largest body of any other request (the OpenAPI description is about 1 MB).
const SMALL_LIMIT: u64 = 64 << 20;
/// Characters of server text kept in a message.
const SHOWN: usize = 300;
const USER_AGENT: &str = concat!("slurmplan/", env!("CARGO_PKG_VERSION"));

/// Why the transport cannot be set up (nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetupError {
    pub message: String,
    pub hint: String,
}

fn setup(message: impl Into<String>, hint: impl Into<String>) -> SetupError {
    SetupError { message: message.into(), hint: hint.into() }
}

/// A slurmrestd JWT. Debug shows `<redacted>`; there is no Display and no Clone.
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from text (a file's content or `SLURM_JWT`): surrounding whitespace dropped; it
    /// must look like a JWT (three base64url parts), which also keeps it a valid header value.
    pub fn new(text: &str, from: &str) -> Result<Token, SetupError> {
        let t = text.trim();
        let parts: Vec<&str> = t.split('.').collect();
        let ok = parts.len() == 3
            && parts[..2].iter().all(|p| !p.is_empty())
            && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !ok {
            return Err(setup(
                format!("{from} does not hold a JWT (three base64url parts joined by `.`)"),
                "make one with `scontrol token username=USER lifespan=SECONDS` and keep only the part after `SLURM_JWT=`",
            ));
        }
        Ok(Token(t.to_string()))
    }

    /// The token in `path`, a regular file private to its owner, not a link.
    pub fn from_file(path: &Path) -> Result<Token, SetupError> {
        let bytes = slurmplan_input::read_private(path).map_err(|e| {
            setup(
                format!("cannot use the token file `{}`: {e}", path.display()),
                "the token file must be a regular file readable by its owner only (chmod 600)",
            )
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| setup(format!("`{}` is not text", path.display()), "put the JWT alone in the file"))?;
        Token::new(text, &format!("`{}`", path.display()))
    }

    /// The user the token was made for (its `sun` claim, as `scontrol token` writes it), if
    /// the payload says.
    pub fn user(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct Claims {
            sun: Option<String>,
        }
        let payload = self.0.split('.').nth(1)?;
        let bytes = base64url(payload)?;
        let c: Claims = serde_json::from_slice(&bytes).ok()?;
        c.sun.filter(|s| valid_user(s))
    }

    /// `text` with every occurrence of the token replaced.
    fn scrub(&self, text: &str) -> String {
        text.replace(&self.0, "<redacted>")
    }
}

fn valid_user(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic())
}

/// Decode unpadded base64url.
fn base64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// How to reach slurmrestd.
#[derive(Debug)]
pub struct Options {
    /// `http(s)://HOST[:PORT][/PREFIX]`.
    pub url: String,
    /// `X-SLURM-USER-NAME`; `None` takes the token's own user.
    pub user: Option<String>,
    pub token: Token,
    /// PEM file of the CA(s) to trust instead of Mozilla's roots.
    pub ca_cert: Option<std::path::PathBuf>,
    /// Per request, from connect to the last byte.
    pub timeout: Duration,
}

/// The slurmrestd transport.
pub struct RestTransport {
    agent: ureq::Agent,
    base: String,
    user: String,
    token: Token,
    timeout: Duration,
    parser: OnceLock<Result<String, String>>,
    /// The plain association read of each cluster, shared by its association and
    /// DefaultAccount reads ([`RestTransport::plain`]).
    plain: std::sync::Mutex<std::collections::HashMap<String, Plain>>,
}

/// A cluster's plain association read, taken once for its association read and its
/// DefaultAccount read (every row carries `is_default`): whichever asks first makes the
/// request, the other waits for it. `taken` says which of the two has it; a read asking again
/// (a read taken anew) gets a new request.
struct Plain {
    rows: std::sync::Arc<OnceLock<Result<std::sync::Arc<Vec<render::Assoc>>, Failed>>>,
    taken: [bool; 2],
}

impl std::fmt::Debug for RestTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestTransport").field("base", &self.base).field("user", &self.user).finish_non_exhaustive()
    }
}

/// Whether `host` is a loopback name or address.
fn loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The base URL, checked: http(s), a host, no user info, query or fragment; plain http only to
/// a loopback address. Returned without a trailing `/`.
pub fn check_url(url: &str) -> Result<String, SetupError> {
    let hint = "give the slurmrestd URL as https://HOST:PORT (plain http only to 127.0.0.1, ::1 or localhost)";
    let uri: ureq::http::Uri =
        url.parse().map_err(|_| setup(format!("`{}` is not a URL", url.escape_debug()), hint))?;
    let scheme = uri.scheme_str().unwrap_or("");
    let Some(auth) = uri.authority() else {
        return Err(setup(format!("`{}` names no host", url.escape_debug()), hint));
    };
    if auth.as_str().contains('@') || uri.query().is_some() || url.contains('#') {
        return Err(setup(format!("`{}`: no user, query or fragment in the slurmrestd URL", url.escape_debug()), hint));
    }
    match scheme {
        "https" => {}
        "http" if loopback(auth.host()) => {}
        "http" => {
            return Err(setup(
                format!(
                    "`{}` is plain http to another machine: the JWT would cross the network in clear",
                    url.escape_debug()
                ),
                "use https (with --ca-cert for a private CA), or a tunnel to a loopback port (`kubectl port-forward`, `ssh -L`)",
            ));
        }
        _ => return Err(setup(format!("`{}` is not an http(s) URL", url.escape_debug()), hint)),
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn read_ca(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, SetupError> {
    let hint = "pass --ca-cert FILE with the PEM certificate(s) of your CA";
    let text = slurmplan_input::read(path)
        .map_err(|e| setup(format!("cannot read the CA file `{}`: {e}", path.display()), hint))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&text) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(_) => return Err(setup(format!("`{}` is not a PEM file", path.display()), hint)),
        }
    }
    if certs.is_empty() {
        return Err(setup(format!("`{}` holds no certificate", path.display()), hint));
    }
    Ok(certs)
}

/// A query value, percent-encoded (names come from slurmdbd).
fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// The flags of the association reads in v0.0.42, whose query parameters are named by their
/// descriptions (an unknown name is ignored with a warning, which [`RestTransport::get`]
/// refuses).
const WITHOUT_PARENT_LIMITS: &str = "Exclude%20limits%20from%20parents=true";
const RAW_QOS: &str = "Include%20the%20raw%20QOS%20or%20delta_qos=true";
/// (The DefaultAccount read uses the plain read's `is_default`, not the `Filter to only defaults`
/// flag: one request for both; the fixtures show both give the same marks.)
/// The flags of the three association reads of a cluster (`render::AssocReads`): effective,
/// own, own with the raw QoS.
const ASSOC_READS: [&[&str]; 3] = [&[], &[WITHOUT_PARENT_LIMITS], &[WITHOUT_PARENT_LIMITS, RAW_QOS]];

/// The path (under `/slurmdb/VERSION/`) of an association read of `cluster` with `flags`.
fn assoc_path(cluster: &str, flags: &[&str]) -> String {
    let mut q = format!("associations/?cluster={}", enc(cluster));
    for f in flags {
        q.push('&');
        q.push_str(f);
    }
    q
}

trait Body: DeserializeOwned {
    fn envelope(&self) -> &Envelope;
}

macro_rules! body {
    ($($t:ty),*) => {$(impl Body for $t { fn envelope(&self) -> &Envelope { &self.envelope } })*};
}
body!(render::AssocsBody, render::SomeAssocsBody, render::ClustersBody, render::AccountsBody, render::QosBody);

/// A failed request: the message, and whether it ran out of time.
#[derive(Clone)]
struct Failed {
    message: String,
    timed_out: bool,
}

impl RestTransport {
    pub fn new(opts: Options) -> Result<RestTransport, SetupError> {
        let base = check_url(&opts.url)?;
        let user = match opts.user {
            Some(u) if valid_user(&u) => u,
            Some(u) => {
                return Err(setup(
                    format!("`{}` is not a user name", u.escape_debug()),
                    "give --rest-user the name the token was made for",
                ));
            }
            None => opts.token.user().ok_or_else(|| {
                setup("the token does not name its user (no `sun` claim)", "give the user with --rest-user NAME")
            })?,
        };
        if opts.timeout.is_zero() {
            return Err(setup("a timeout of 0 would end every request", "give a timeout in seconds, e.g. 120"));
        }
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
            .proxy(None)
            .tls_config(tls.build())
            .build();
        Ok(RestTransport {
            agent: config.into(),
            base,
            user,
            token: opts.token,
            timeout: opts.timeout,
            parser: OnceLock::new(),
            plain: Default::default(),
        })
    }

    /// The base URL (no token in it).
    pub fn url(&self) -> &str {
        &self.base
    }

    /// `X-SLURM-USER-NAME`.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The data parser in use, chosen on first use from `GET /openapi/v3`.
    pub fn data_parser(&self) -> Result<&str, String> {
        self.parser.get_or_init(|| self.negotiate().map_err(|f| f.message)).as_deref().map_err(Clone::clone)
    }

    fn negotiate(&self) -> Result<String, Failed> {
        #[derive(Deserialize)]
        struct OpenApi {
            paths: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
        }
        let url = format!("{}/openapi/v3", self.base);
        let api: OpenApi = self.send("/openapi/v3", SMALL_LIMIT, |r| {
            serde_json::from_reader(std::io::BufReader::new(r)).map_err(|e| self.unreadable(&url, &e))
        })?;
        let offered: std::collections::BTreeSet<&str> = api
            .paths
            .keys()
            .filter_map(|p| p.strip_prefix("/slurmdb/"))
            .filter_map(|p| p.split('/').next())
            .filter(|v| v.starts_with('v'))
            .collect();
        match SUPPORTED.iter().find(|v| offered.contains(*v)) {
            Some(v) => Ok(v.to_string()),
            None => Err(Failed {
                message: format!(
                    "slurmrestd at {} offers the slurmdb data parsers {}; slurmplan reads {} (Slurm 24.11 and later)",
                    self.base,
                    if offered.is_empty() {
                        "none".to_string()
                    } else {
                        offered.into_iter().collect::<Vec<_>>().join(", ")
                    },
                    SUPPORTED.join(", ")
                ),
                timed_out: false,
            }),
        }
    }

    /// One GET of `path` (from the base): any status but 200 is a failure; the body of a 200
    /// is handed to `take` through a reader of at most `limit` bytes.
    fn send<T>(
        &self,
        path: &str,
        limit: u64,
        take: impl FnOnce(&mut dyn std::io::Read) -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .agent
            .get(&url)
            .header("X-SLURM-USER-NAME", &self.user)
            .header("X-SLURM-USER-TOKEN", &self.token.0)
            .header("Accept", "application/json")
            .call();
        let mut resp = resp.map_err(|e| {
            let timed_out = matches!(e, ureq::Error::Timeout(_));
            Failed { message: format!("GET {url}: {}", self.shown(&e.to_string())), timed_out }
        })?;
        let status = resp.status().as_u16();
        let mut reader = resp.body_mut().with_config().limit(limit).reader();
        if status != 200 {
            let mut body = Vec::new();
            let _ = (&mut reader).take(64 << 10).read_to_end(&mut body);
            return Err(self.status_failure("GET", &url, status, &body));
        }
        take(&mut reader)
    }

    /// A body that did not arrive whole or does not parse.
    fn unreadable(&self, url: &str, e: &dyn std::fmt::Display) -> Failed {
        let text = e.to_string();
        let low = text.to_ascii_lowercase();
        Failed {
            message: format!("GET {url}: an answer slurmplan cannot read: {}", self.shown(&text)),
            timed_out: low.contains("timeout") || low.contains("timed out"),
        }
    }

    /// Server text for a message: token scrubbed, control characters escaped, cut.
    fn shown(&self, text: &str) -> String {
        let s = self.token.scrub(text);
        let s: String = s.chars().flat_map(char::escape_debug).collect();
        if s.chars().count() > SHOWN { s.chars().take(SHOWN).collect::<String>() + "..." } else { s }
    }

    fn status_failure(&self, method: &str, url: &str, status: u16, body: &[u8]) -> Failed {
        let problems = serde_json::from_slice::<Envelope>(body)
            .map(|e| e.errors.iter().map(render::Problem::line).collect::<Vec<_>>().join("; "))
            .unwrap_or_default();
        let why = match status {
            401 => " (no token, or one slurmrestd refuses: check the token file and `auth/jwt`)",
            403 => " (the user may not read accounting: check --rest-user and the token's user)",
            404 => " (no such path: check the URL's prefix and that slurmrestd runs `-s openapi/slurmdbd`)",
            _ => "",
        };
        // the whole (bounded) body goes to `shown`, which scrubs the token before it cuts
        let text = if problems.is_empty() { String::from_utf8_lossy(body).into_owned() } else { problems };
        Failed { message: format!("{method} {url}: HTTP {status}{why}: {}", self.shown(text.trim())), timed_out: false }
    }

    /// GET `path` under the negotiated parser's `/slurmdb/VERSION/`, as `T`, parsed as it
    /// arrives; any status but 200, and any error or warning in the body, is a failure.
    fn get<T: Body>(&self, path: &str, limit: u64) -> Result<T, Failed> {
        self.get_tolerating(path, limit, |_| false)
    }

    /// [`Self::get`], but the warnings `tolerated` accepts are no failure (slurmrestd 24.11.5
    /// warns `slurmdb_associations_get(..) found nothing` for an association query nothing
    /// matches: [`found_nothing`]).
    fn get_tolerating<T: Body>(&self, path: &str, limit: u64, tolerated: fn(&Problem) -> bool) -> Result<T, Failed> {
        let version = self.data_parser().map_err(|message| Failed { message, timed_out: false })?;
        let full = format!("/slurmdb/{version}/{path}");
        let url = format!("{}{full}", self.base);
        let body: T = self.send(&full, limit, |r| {
            serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, r))
                .map_err(|e| self.unreadable(&url, &e))
        })?;
        let env = body.envelope();
        let warnings: Vec<&Problem> = env.warnings.iter().filter(|p| !tolerated(p)).collect();
        if !env.errors.is_empty() || !warnings.is_empty() {
            let lines: Vec<String> = env
                .errors
                .iter()
                .map(|p| format!("error: {}", p.line()))
                .chain(warnings.iter().map(|p| format!("warning: {}", p.line())))
                .collect();
            return Err(Failed { message: format!("GET {url}: {}", self.shown(&lines.join("; "))), timed_out: false });
        }
        Ok(body)
    }

    /// One request of a write ([`crate::write`]): `method` on `path` under the negotiated
    /// parser's `/slurmdb/VERSION/`, with a JSON body. The status and the body's JSON (`null`
    /// for none, as a 304 has) come back; a body whose `errors` are not empty is a failure
    /// whatever the status, and so are warnings (a write slurmrestd partly ignored).
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(u16, serde_json::Value), Failed> {
        let version = self.data_parser().map_err(|message| Failed { message, timed_out: false })?;
        let url = format!("{}/slurmdb/{version}/{path}", self.base);
        let failed = |e: ureq::Error| Failed {
            message: format!("{method} {url}: {}", self.shown(&e.to_string())),
            timed_out: matches!(e, ureq::Error::Timeout(_)),
        };
        let resp = match (method, body) {
            ("GET" | "DELETE", None) => {
                let req = if method == "GET" { self.agent.get(&url) } else { self.agent.delete(&url) };
                req.header("X-SLURM-USER-NAME", &self.user)
                    .header("X-SLURM-USER-TOKEN", &self.token.0)
                    .header("Accept", "application/json")
                    .call()
            }
            ("POST", Some(b)) => self
                .agent
                .post(&url)
                .header("X-SLURM-USER-NAME", &self.user)
                .header("X-SLURM-USER-TOKEN", &self.token.0)
                .header("Accept", "application/json")
                .header("Content-Type", "application/json")
                .send(serde_json::to_vec(b).expect("a JSON value serialises")),
            _ => unreachable!("write requests are GET, DELETE without a body, or POST with one"),
        };
        let mut resp = resp.map_err(failed)?;
        let status = resp.status().as_u16();
        let mut reader = resp.body_mut().with_config().limit(ASSOC_LIMIT).reader();
        let mut text = Vec::new();
        if status != 200 && status != 304 {
            // as a read's failure: the first 64 KB of what came back, errors first
            let _ = (&mut reader).take(64 << 10).read_to_end(&mut text);
            return Err(self.status_failure(method, &url, status, &text));
        }
        reader.read_to_end(&mut text).map_err(|e| self.unreadable(&url, &e))?;
        let value: serde_json::Value = if text.iter().all(u8::is_ascii_whitespace) {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&text).map_err(|e| self.unreadable(&url, &e))?
        };
        let problems = |key: &str| -> Vec<String> {
            value
                .get(key)
                .and_then(|v| serde_json::from_value::<Vec<render::Problem>>(v.clone()).ok())
                .unwrap_or_default()
                .iter()
                .map(render::Problem::line)
                .collect()
        };
        let (errors, warnings) = (problems("errors"), problems("warnings"));
        if !errors.is_empty() || !warnings.is_empty() {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| format!("error: {e}"))
                .chain(warnings.iter().map(|w| format!("warning: {w}")))
                .collect();
            return Err(Failed {
                message: format!("{method} {url}: HTTP {status}: {}", self.shown(&lines.join("; "))),
                timed_out: false,
            });
        }
        Ok((status, value))
    }

    /// Send one call of a plan step ([`crate::write::calls`]). Success is HTTP 200 with no
    /// error or warning in the body; a 304 ("Data has not changed") means slurmdbd changed
    /// nothing, which slurmplan never plans: a failure, as sacctmgr's "Nothing modified" is.
    /// Returns what slurmrestd said (for the journal and the output), token scrubbed.
    pub fn write(&self, call: &Call) -> Result<String, WriteFailed> {
        let nothing = |what: &str| WriteFailed {
            message: format!("{what}: slurmdbd changed nothing (HTTP 304)"),
            hint: "the state changed since planning: re-run `slurmplan plan`".into(),
            timed_out: false,
        };
        let done = |what: &str, (status, v): (u16, serde_json::Value)| -> Result<String, WriteFailed> {
            if status == 304 {
                return Err(nothing(what));
            }
            let said = v.as_object().map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "meta" | "errors" | "warnings"))
                    .map(|(k, v)| match v.as_str() {
                        Some(text) => format!("{k}: {}", text.trim()),
                        None => format!("{k}: {v}"),
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            });
            Ok(self.shown(&format!("{what}: HTTP 200 {}", said.unwrap_or_default())))
        };
        match call {
            Call::Post { endpoint, body } => {
                let what = format!("POST {endpoint}");
                done(&what, self.request("POST", endpoint, Some(body)).map_err(WriteFailed::from)?)
            }
            Call::Delete { endpoint, filters } => {
                let path = delete_path(endpoint, filters)?;
                let what = format!("DELETE {path}");
                let (status, v) = self.request("DELETE", &path, None)?;
                let removed = v.get("removed_associations").and_then(|r| r.as_array()).map_or(0, Vec::len);
                if status == 304 || removed == 0 {
                    return Err(nothing(&what));
                }
                done(&what, (status, v))
            }
            Call::DeleteQos { name } => {
                let what = format!("DELETE qos/{name}");
                done(&what, self.request("DELETE", &name_path("qos/", name), None)?)
            }
            Call::Rows { cluster, keys, change } => {
                let rows = self.rows(cluster, keys, change)?;
                let what = format!("POST associations/ ({} rows)", rows.len());
                done(&what, self.request("POST", "associations/", Some(&serde_json::json!({ "associations": rows })))?)
            }
            Call::Qos { name, set } => {
                let (_, v) = self.request("GET", &name_path("qos/", name), None)?;
                let mut q = one(&v, "qos", name)?;
                write::patch_qos(&mut q, set).map_err(|u| WriteFailed {
                    message: u.0,
                    hint: String::new(),
                    timed_out: false,
                })?;
                done(
                    &format!("POST qos/ ({name})"),
                    self.request("POST", "qos/", Some(&serde_json::json!({ "qos": [q] })))?,
                )
            }
            Call::Record { name, record } => {
                let (_, v) = self.request("GET", &name_path("account/", name), None)?;
                let a = one(&v, "accounts", name)?;
                let body = serde_json::json!({ "accounts": [write::patch_record(&a, record)] });
                done(&format!("POST accounts/ ({name})"), self.request("POST", "accounts/", Some(&body))?)
            }
        }
    }

    /// The rows of `keys` on `cluster` (own values), exactly those, with `change` applied.
    fn rows(&self, cluster: &str, keys: &[RowKey], change: &RowChange) -> Result<Vec<serde_json::Value>, WriteFailed> {
        let path = rows_path(cluster, keys)?;
        let (_, v) = self.request("GET", &path, None)?;
        // the rows read, by (account, user), each row once: a batch names many keys
        let mut by_key: std::collections::HashMap<(&str, &str), Vec<&serde_json::Value>> =
            std::collections::HashMap::new();
        let all = v.get("associations").and_then(|a| a.as_array()).map(Vec::as_slice).unwrap_or_default();
        for r in all {
            if text(r, "cluster") == cluster {
                by_key.entry((text(r, "account"), text(r, "user"))).or_default().push(r);
            }
        }
        let any_partition = matches!(change, RowChange::MakeDefault);
        let mut out = Vec::new();
        for k in keys {
            let partition = k.partition.as_deref().unwrap_or("");
            let found: Vec<&serde_json::Value> = by_key
                .get(&(k.account.as_str(), k.user.as_str()))
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .copied()
                .filter(|r| any_partition || text(r, "partition") == partition)
                .collect();
            let fits = if any_partition { !found.is_empty() } else { found.len() == 1 };
            if !fits {
                return Err(WriteFailed {
                    message: format!(
                        "GET {path}: {} association(s) of account `{}` user `{}` partition `{}` on `{cluster}`, where the plan expects {}",
                        found.len(),
                        k.account,
                        k.user,
                        k.partition.as_deref().unwrap_or(""),
                        if any_partition { "at least one" } else { "one" }
                    ),
                    hint: "the state changed since planning: re-run `slurmplan plan`".into(),
                    timed_out: false,
                });
            }
            out.extend(found.into_iter().map(|r| write::changed_row(r, change)));
        }
        Ok(out)
    }

    /// The plain association rows of `cluster` for the association read (`which` 0) or the
    /// DefaultAccount read (1): one request serves both ([`Plain`]), so a plan makes three
    /// association requests per cluster, not four, and the marks match the rows.
    fn plain(&self, cluster: &str, which: usize) -> Result<std::sync::Arc<Vec<render::Assoc>>, Failed> {
        let cell = {
            let mut all = self.plain.lock().unwrap_or_else(|e| e.into_inner());
            let fresh = || Plain { rows: Default::default(), taken: [false; 2] };
            let entry = all.entry(cluster.to_string()).or_insert_with(fresh);
            if entry.taken[which] {
                *entry = fresh();
            }
            entry.taken[which] = true;
            let cell = entry.rows.clone();
            if entry.taken == [true; 2] {
                all.remove(cluster);
            }
            cell
        };
        cell.get_or_init(|| self.assocs(cluster, &[]).map(std::sync::Arc::new)).clone()
    }

    fn assocs(&self, cluster: &str, flags: &[&str]) -> Result<Vec<render::Assoc>, Failed> {
        self.get::<AssocsBody>(&assoc_path(cluster, flags), ASSOC_LIMIT).map(|b| b.associations)
    }

    /// The text of `read` (of `cluster`, for a per-cluster read).
    fn text(&self, read: &Read, filter: Filter<'_>) -> Result<String, Failed> {
        let cluster = filter.cluster();
        let rendered =
            |r: Result<String, render::RenderError>| r.map_err(|e| Failed { message: e.0, timed_out: false });
        let need_cluster = || {
            cluster.ok_or_else(|| Failed {
                message: format!("the {} read is taken per cluster", read.file),
                timed_out: false,
            })
        };
        match read.file {
            f if f == reads::VERSION.file => {
                let b: render::ClustersBody = self.get("clusters/", SMALL_LIMIT)?;
                let release = b.envelope.meta.map(|m| m.slurm.release).unwrap_or_default();
                Ok(format!("slurm {release}\n"))
            }
            reads::CLUSTERS => rendered(render::render_clusters(&self.get("clusters/", SMALL_LIMIT)?)),
            reads::ASSOCS => {
                let c = need_cluster()?;
                // One after another, not at once: slurmrestd 24.11 holds tens of KB per
                // association while it answers (8 GB at 50,000 with the three at once,
                // docs/performance.md), and gives little back.
                let [_, own, raw] = ASSOC_READS;
                let effective = self.plain(c, 0)?;
                let own = self.assocs(c, own)?;
                let raw = self.assocs(c, raw)?;
                rendered(render::render_assocs(c, &AssocReads { effective, own, raw }))
            }
            reads::DEFAULTS => {
                let c = need_cluster()?;
                rendered(render::render_defaults(c, &self.plain(c, 1)?))
            }
            reads::ACCOUNTS_DESCR => {
                rendered(render::render_accounts(&self.get("accounts/", SMALL_LIMIT)?, AccountText::Description))
            }
            reads::ACCOUNTS_ORG => {
                rendered(render::render_accounts(&self.get("accounts/", SMALL_LIMIT)?, AccountText::Organization))
            }
            reads::QOS => rendered(render::render_qos(&self.get("qos/", SMALL_LIMIT)?)),
            f if f == reads::USERS_SEEN.file => {
                let Filter::Users(users) = filter else {
                    return Err(Failed { message: format!("the {f} read names its users"), timed_out: false });
                };
                let path = users_path(users).ok_or_else(|| Failed {
                    message: format!("no slurmrestd filter carries the users {users:?}"),
                    timed_out: false,
                })?;
                let rows =
                    self.get_tolerating::<render::SomeAssocsBody>(&path, ASSOC_LIMIT, found_nothing)?.associations;
                // as sacctmgr prints `format=Cluster,User`: one line per user association
                Ok(rows.iter().filter(|a| !a.user.is_empty()).map(|a| format!("{}|{}\n", a.cluster, a.user)).collect())
            }
            other => Err(Failed { message: format!("no slurmrestd read for `{other}`"), timed_out: false }),
        }
    }

    /// The requests a read makes, as messages show them.
    fn requests(&self, read: &Read, filter: Filter<'_>) -> Vec<String> {
        let v = self.parser.get().and_then(|r| r.as_deref().ok()).unwrap_or(SUPPORTED[0]);
        let c = filter.cluster().unwrap_or("");
        let paths: Vec<String> = match (read.file, filter) {
            (reads::CLUSTERS, _) => vec!["clusters/".into()],
            (f, _) if f == reads::VERSION.file => vec!["clusters/".into()],
            (reads::ASSOCS, _) => ASSOC_READS.iter().map(|flags| assoc_path(c, flags)).collect(),
            (reads::DEFAULTS, _) => vec![assoc_path(c, &[])],
            (reads::ACCOUNTS_DESCR | reads::ACCOUNTS_ORG, _) => vec!["accounts/".into()],
            (reads::QOS, _) => vec!["qos/".into()],
            (f, Filter::Users(users)) if f == reads::USERS_SEEN.file => users_path(users).into_iter().collect(),
            _ => vec![],
        };
        paths.into_iter().map(|p| format!("GET {}/slurmdb/{v}/{p}", self.base)).collect()
    }
}

/// The read whose arguments (with `cluster=NAME` after them for a per-cluster read, `user=A,B`
/// after [`reads::USERS_SEEN`]'s) are `args`, and that last word's value.
fn read_of(args: &[String]) -> Option<(&'static Read, Option<&str>)> {
    [&reads::VERSION, &reads::USERS_SEEN].into_iter().chain(READS).find_map(|r| {
        let n = r.args.len();
        if args.len() < n || !args[..n].iter().zip(r.args).all(|(a, b)| a == b) {
            return None;
        }
        let key = if r.per_cluster { "cluster=" } else { "user=" };
        match &args[n..] {
            [] if r.file != reads::USERS_SEEN.file => Some((r, None)),
            [c] if r.per_cluster || r.file == reads::USERS_SEEN.file => c.strip_prefix(key).map(|c| (r, Some(c))),
            _ => None,
        }
    })
}

/// slurmrestd's warning for an association query that matched nothing (24.11.5:
/// `slurmdb_associations_get(0x..) found nothing` from `_dump_assoc_cond`): for the users read,
/// an answer (none of them has an association), not a failure.
fn found_nothing(p: &Problem) -> bool {
    p.source.as_deref() == Some("_dump_assoc_cond")
        && p.description
            .as_deref()
            .is_some_and(|d| d.starts_with("slurmdb_associations_get(") && d.ends_with(" found nothing"))
}

/// The request of [`reads::USERS_SEEN`] for `users` (`None` for a name no filter can carry).
fn users_path(users: &[String]) -> Option<String> {
    query(&[("user", users.to_vec())]).ok().map(|q| format!("associations/?{q}"))
}

impl Transport for RestTransport {
    fn read(&self, read: &Read, filter: Filter<'_>, sink: &mut dyn FnMut(&[u8])) -> Result<Output, RunError> {
        let start = Instant::now();
        let out = match self.text(read, filter) {
            Ok(text) => {
                sink(text.as_bytes());
                Output {
                    code: Some(0),
                    stdout: String::new(),
                    stderr: String::new(),
                    timed_out: false,
                    duration: start.elapsed(),
                }
            }
            Err(f) => Output {
                code: if f.timed_out { None } else { Some(1) },
                stdout: String::new(),
                stderr: format!("error: {}\n", f.message),
                timed_out: f.timed_out,
                duration: start.elapsed(),
            },
        };
        Ok(out)
    }

    fn run(&self, args: &[String], _stdin: Option<&[u8]>) -> Result<Output, RunError> {
        Err(RunError::Spawn {
            program: format!("slurmrestd at {}", self.base),
            reason: format!(
                "slurmplan does not write through slurmrestd yet (asked to run `sacctmgr {}`); apply with --transport sacctmgr",
                args.join(" ")
            ),
        })
    }

    fn describe(&self, args: &[String]) -> Vec<String> {
        match read_of(args) {
            Some((read, word)) if read.file == reads::USERS_SEEN.file => {
                let users: Vec<String> = word.unwrap_or("").split(',').map(String::from).collect();
                self.requests(read, Filter::Users(&users))
            }
            Some((read, cluster)) => self.requests(read, cluster.map_or(Filter::None, Filter::Cluster)),
            None => vec![format!("slurmrestd at {}: no request for `sacctmgr {}`", self.base, args.join(" "))],
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // header.{"sun":"root","exp":1}.sig
    const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290IiwiZXhwIjoxfQ.c2ln";

    #[test]
    fn token_is_checked_redacted_and_names_its_user() {
        let t = Token::new(&format!("  {JWT}\n"), "test").unwrap();
        assert_eq!(t.user().as_deref(), Some("root"));
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert_eq!(t.scrub(&format!("a {JWT} b")), "a <redacted> b");
        for bad in ["", "abc", "a.b", "a b.c.d", "a..c", "a.b.c\nX-Evil: 1"] {
            assert!(Token::new(bad, "test").is_err(), "{bad:?}");
        }
        let anon = Token::new("eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.c2ln", "test").unwrap();
        assert_eq!(anon.user(), None);
    }

    #[test]
    fn urls_are_checked() {
        assert_eq!(check_url("http://127.0.0.1:6820/").unwrap(), "http://127.0.0.1:6820");
        assert!(check_url("http://localhost:6820").is_ok());
        assert!(check_url("http://[::1]:6820").is_ok());
        assert_eq!(check_url("https://rest.example:6820/slurm/").unwrap(), "https://rest.example:6820/slurm");
        for bad in [
            "http://rest.example:6820",
            "ftp://x",
            "https://u:p@rest.example",
            "https://r.example/?a=b",
            "nonsense",
            "https://r.example/#f",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        let e = check_url("http://10.0.0.5:6820").unwrap_err();
        assert!(e.message.contains("in clear"), "{e:?}");
    }

    #[test]
    fn every_read_is_recognised_from_its_arguments() {
        for r in std::iter::once(&reads::VERSION).chain(READS) {
            let cluster = r.per_cluster.then_some("c1");
            let args = r.args_for(cluster.map_or(Filter::None, Filter::Cluster));
            let (got, c) = read_of(&args).unwrap();
            assert_eq!((got.file, c), (r.file, cluster));
        }
        let users = ["a_b".to_string(), "c".to_string()];
        let args = reads::USERS_SEEN.args_for(Filter::Users(&users));
        let (got, word) = read_of(&args).unwrap();
        assert_eq!((got.file, word), (reads::USERS_SEEN.file, Some("a_b,c")));
        assert_eq!(users_path(&users).unwrap(), "associations/?user=a_b%2Cc");
        assert!(read_of(&["-i".into(), "add".into()]).is_none());
    }

    #[test]
    fn only_the_found_nothing_warning_of_an_association_query_is_an_answer() {
        let p = |d: &str, src: &str| Problem { description: Some(d.into()), error: None, source: Some(src.into()) };
        assert!(found_nothing(&p("slurmdb_associations_get(0x7f2f843d93e0) found nothing", "_dump_assoc_cond")));
        assert!(!found_nothing(&p("slurmdb_associations_get(0x7f2f843d93e0) found nothing", "_dump_qos")));
        assert!(!found_nothing(&p("Unable to query associations", "_dump_assoc_cond")));
        assert!(!found_nothing(&Problem { description: None, error: None, source: None }));
    }

    #[test]
    fn a_filter_query_encodes_every_name_and_its_list_separator() {
        let q = query(&[("cluster", vec!["c1".into()]), ("user", vec!["a&b".into(), "ü x".into()])]).unwrap();
        assert_eq!(q, "cluster=c1&user=a%26b%2C%C3%BC%20x");
        // a filter without a value would widen a DELETE to every row
        assert!(query(&[("cluster", vec!["c1".into()]), ("account", vec![])]).is_err());
        assert!(query(&[("account", vec!["".into()])]).is_err());
        assert!(query(&[("account", vec!["a,b".into()])]).is_err());
    }

    #[test]
    fn writes_are_refused_without_sending() {
        let t = RestTransport::new(Options {
            url: "http://127.0.0.1:9".into(),
            user: None,
            token: Token::new(JWT, "test").unwrap(),
            ca_cert: None,
            timeout: Duration::from_secs(1),
        })
        .unwrap();
        assert_eq!(t.user(), "root");
        let e = t.run(&["-i".into(), "add".into(), "account".into()], None).unwrap_err();
        assert!(e.to_string().contains("does not write through slurmrestd"), "{e}");
        assert!(!format!("{t:?}").contains(JWT));
    }

    #[test]
    fn base64url_decodes() {
        assert_eq!(base64url("eyJzdW4iOiJyb290In0").unwrap(), br#"{"sun":"root"}"#);
        assert_eq!(base64url("YQ").unwrap(), b"a");
        assert!(base64url("a+b").is_none());
    }
}

/// Why a write ([`RestTransport::write`]) failed: what was sent and what came back, and what
/// to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailed {
    pub message: String,
    pub hint: String,
    pub timed_out: bool,
}

impl From<Failed> for WriteFailed {
    fn from(f: Failed) -> WriteFailed {
        WriteFailed { message: f.message, hint: String::new(), timed_out: f.timed_out }
    }
}

/// The read of a read-modify-write of association rows: `associations/` of the keys' accounts
/// (and users, unless an account row is among them: those have no user to filter on, and the
/// keys pick them out of the answer) on `cluster`, own values.
pub fn rows_path(cluster: &str, keys: &[RowKey]) -> Result<String, WriteFailed> {
    let mut accounts: Vec<String> = keys.iter().map(|k| k.account.clone()).collect();
    accounts.sort();
    accounts.dedup();
    let mut users: Vec<String> = keys.iter().map(|k| k.user.clone()).filter(|u| !u.is_empty()).collect();
    users.sort();
    users.dedup();
    let mut filters = vec![("cluster", vec![cluster.to_string()]), ("account", accounts)];
    if keys.iter().all(|k| !k.user.is_empty()) {
        filters.push(("user", users));
    }
    Ok(format!("associations/?{}&{WITHOUT_PARENT_LIMITS}", query(&filters)?))
}

/// `endpoint?filters` of a DELETE ([`query`]).
pub fn delete_path(endpoint: &str, filters: &[(&'static str, Vec<String>)]) -> Result<String, WriteFailed> {
    Ok(format!("{endpoint}?{}", query(filters)?))
}

/// `prefix` and one object's name, percent-encoded (`qos/NAME`, `account/NAME`).
pub fn name_path(prefix: &str, name: &str) -> String {
    format!("{prefix}{}", enc(name))
}

/// A query of filters (`name=v1,v2&...`), each value percent-encoded. Every filter must name
/// at least one value and no value may hold a comma (the list separator): a DELETE without a
/// filter would remove more than the step names.
fn query(filters: &[(&'static str, Vec<String>)]) -> Result<String, WriteFailed> {
    let mut parts = Vec::new();
    for (name, values) in filters {
        if values.is_empty() || values.iter().any(|v| v.is_empty() || v.contains(',')) {
            return Err(WriteFailed {
                message: format!("refusing a request whose `{name}` filter is empty or holds a comma: {values:?}"),
                hint: "this is a bug in slurmplan worth reporting".into(),
                timed_out: false,
            });
        }
        // the list separator must be encoded too: slurmrestd 24.11.5 answers 400 "Unable to
        // parse query" to a plain comma
        parts.push(format!("{name}={}", values.iter().map(|v| enc(v)).collect::<Vec<_>>().join("%2C")));
    }
    Ok(parts.join("&"))
}

/// A string field of a JSON object as read (`""` when missing or not a string).
fn text<'v>(v: &'v serde_json::Value, field: &str) -> &'v str {
    v.get(field).and_then(serde_json::Value::as_str).unwrap_or("")
}

/// The one object named `name` in the list `key` of a read.
fn one(v: &serde_json::Value, key: &str, name: &str) -> Result<serde_json::Value, WriteFailed> {
    let list = v.get(key).and_then(|l| l.as_array()).cloned().unwrap_or_default();
    let found: Vec<serde_json::Value> =
        list.into_iter().filter(|o| o.get("name").and_then(|n| n.as_str()) == Some(name)).collect();
    match <[serde_json::Value; 1]>::try_from(found) {
        Ok([o]) => Ok(o),
        Err(found) => Err(WriteFailed {
            message: format!(
                "the read of {key} `{name}` brought {} objects of that name, where the plan expects one",
                found.len()
            ),
            hint: "the state changed since planning: re-run `slurmplan plan`".into(),
            timed_out: false,
        }),
    }
}
