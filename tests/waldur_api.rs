//! `slurmplan waldur fetch` and `waldur build --from-api` through the real binary against a local
//! HTTP server that answers like Waldur: the list endpoints paginate with `page`/`page_size`, a
//! `Link` header and `X-Result-Count` (as `waldur_core.core.pagination.LinkHeaderPagination`), the
//! bodies are objects in the shapes of `waldur-api-client`'s models (`Resource`, `ProjectUser`,
//! `OfferingUser`, with fields slurmplan does not read), and a wrong token gets DRF's 401. Faults
//! are injected per request: a 500, a truncated body, a wrong total, endless paging, no answer at
//! all. Every run asserts that no 8 characters of the token appear in its output and the token in
//! no written file. Also: hostile API URLs, proxies (a trap listener, a CONNECT proxy), a 401
//! quoting the token at every offset, SIGTERM/SIGINT during a fetch.

#![recursion_limit = "256"]

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tiny_http::{Header, Response, Server, StatusCode};

mod common;
use common::*;

const TOKEN: &str = "2f0c1d7e9b8a4c3db6e5f4a3c2b1d0e9f8a7b6c5";
const OFFERING: &str = "d3a9b0c1e2f34a5b8c7d6e5f4a3b2c1d";

/// A fault to inject into the answer to a request whose URL contains `url_part`.
#[derive(Clone)]
enum Fault {
    /// HTTP 500 with Django's HTML body, the first `times` times.
    Status500 { times: usize },
    /// The body cut in the middle (framing intact), every time.
    Truncated,
    /// `X-Result-Count` one higher than the list.
    WrongCount,
    /// A `rel="next"` link on every page; past the end, the last page again (with
    /// `X-Result-Count`) or, with `count: false`, an empty page and no `X-Result-Count`.
    EndlessNext { count: bool },
    /// No answer at all: the request is held until the server stops.
    Hang,
    /// The `Authorization` header it got, quoted in the first item's `description`.
    EchoToken,
}

/// Requests a server answers at most: past it, 404 (so that a client that does not stop ends).
const SERVER_BUDGET: usize = 500;

#[derive(Default)]
struct World {
    resources: Vec<Value>,
    teams: BTreeMap<String, Vec<Value>>,
    offering_users: Vec<Value>,
    faults: Vec<(String, Fault)>,
    /// Every request URL, in order.
    log: Vec<String>,
}

struct Waldur {
    world: Arc<Mutex<World>>,
    stop: Arc<AtomicBool>,
    port: u16,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Waldur {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes()).unwrap()
}

fn query(url: &str) -> Vec<(String, String)> {
    url.split_once('?')
        .map(|(_, q)| q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect())
        .unwrap_or_default()
}

impl Waldur {
    fn start(world: World) -> Waldur {
        let server = Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let world = Arc::new(Mutex::new(world));
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (world.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::SeqCst) {
                let Ok(Some(req)) = server.recv_timeout(std::time::Duration::from_millis(50)) else { continue };
                let url = req.url().to_string();
                if w.lock()
                    .unwrap()
                    .faults
                    .iter()
                    .any(|(part, f)| matches!(f, Fault::Hang) && url.contains(part.as_str()))
                {
                    w.lock().unwrap().log.push(url);
                    held.push(req);
                    continue;
                }
                let auth = req.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.to_string());
                let resp = answer(&mut w.lock().unwrap(), port, &url, auth.as_deref());
                let _ = req.respond(resp);
            }
        });
        Waldur { world, stop, port, thread: Some(thread) }
    }

    fn requests(&self) -> Vec<String> {
        self.world.lock().unwrap().log.clone()
    }
}

fn json_response(status: u16, body: Vec<u8>, headers: Vec<Header>) -> Response<Cursor<Vec<u8>>> {
    let mut r = Response::from_data(body).with_status_code(StatusCode(status));
    r.add_header(header("Content-Type", "application/json"));
    for h in headers {
        r.add_header(h);
    }
    r
}

/// The server side: authentication, routing, filtering, pagination, faults.
fn answer(w: &mut World, port: u16, url: &str, auth: Option<&str>) -> Response<Cursor<Vec<u8>>> {
    w.log.push(url.to_string());
    if w.log.len() > SERVER_BUDGET {
        return json_response(404, br#"{"detail":"Invalid page."}"#.to_vec(), vec![]);
    }
    if auth != Some(&format!("Token {TOKEN}")) {
        return json_response(
            401,
            br#"{"detail":"Invalid token."}"#.to_vec(),
            vec![header("WWW-Authenticate", "Token")],
        );
    }
    let fault = w.faults.iter_mut().find(|(part, _)| url.contains(part.as_str())).map(|(_, f)| f);
    if let Some(Fault::Status500 { times }) = fault
        && *times > 0
    {
        *times -= 1;
        let mut r = Response::from_data(b"<h1>Server Error (500)</h1>".to_vec()).with_status_code(StatusCode(500));
        r.add_header(header("Content-Type", "text/html"));
        return r;
    }
    let fault = w.faults.iter().find(|(part, _)| url.contains(part.as_str())).map(|(_, f)| f.clone());
    let q = query(url);
    let path = url.split('?').next().unwrap();
    let items: Vec<Value> = if path == "/api/marketplace-provider-resources/" {
        let states: Vec<&str> = q.iter().filter(|(k, _)| k == "state").map(|(_, v)| v.as_str()).collect();
        assert!(q.iter().any(|(k, v)| k == "offering_uuid" && v == OFFERING), "{url}");
        w.resources
            .iter()
            .filter(|r| states.is_empty() || states.contains(&r["state"].as_str().unwrap()))
            .cloned()
            .collect()
    } else if path == "/api/marketplace-offering-users/" {
        assert!(q.iter().any(|(k, v)| k == "offering_uuid" && v == OFFERING), "{url}");
        w.offering_users.clone()
    } else if let Some(uuid) =
        path.strip_prefix("/api/marketplace-provider-resources/").and_then(|r| r.strip_suffix("/team/"))
    {
        match w.teams.get(uuid) {
            Some(t) => t.clone(),
            None => {
                return json_response(404, br#"{"detail":"No Resource matches the given query."}"#.to_vec(), vec![]);
            }
        }
    } else {
        return json_response(404, br#"{"detail":"Not found."}"#.to_vec(), vec![]);
    };
    let get = |k: &str| q.iter().find(|(key, _)| key == k).and_then(|(_, v)| v.parse::<usize>().ok());
    let page = get("page").unwrap_or(1);
    let size = get("page_size").unwrap_or(10);
    let pages = items.len().div_ceil(size).max(1);
    let endless = match fault {
        Some(Fault::EndlessNext { count }) => Some(count),
        _ => None,
    };
    let mut items = items;
    if let (Some(Fault::EchoToken), Some(Value::Object(first))) = (&fault, items.first_mut()) {
        first.insert("description".into(), json!(format!("synced with {}", auth.unwrap_or_default())));
    }
    let body = if page <= pages {
        serde_json::to_vec(&items[(page - 1) * size..(page * size).min(items.len())]).unwrap()
    } else if endless == Some(true) {
        serde_json::to_vec(&items[(pages - 1) * size..]).unwrap()
    } else if endless == Some(false) {
        b"[]".to_vec()
    } else {
        return json_response(404, br#"{"detail":"Invalid page."}"#.to_vec(), vec![]);
    };
    // Link: first, prev, next, last, absolute, with the request's other parameters.
    let others: String = q.iter().filter(|(k, _)| k != "page").map(|(k, v)| format!("&{k}={v}")).collect();
    let link_to = |p: usize| {
        let rest = others.trim_start_matches('&');
        if p == 1 {
            format!("<http://127.0.0.1:{port}{path}?{rest}>")
        } else {
            format!("<http://127.0.0.1:{port}{path}?{rest}&page={p}>")
        }
    };
    let mut links = vec![format!("{}; rel=\"first\"", link_to(1))];
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", link_to(page - 1)));
    }
    if page < pages || endless.is_some() {
        links.push(format!("{}; rel=\"next\"", link_to(page + 1)));
    }
    links.push(format!("{}; rel=\"last\"", link_to(pages)));
    let count = items.len() + usize::from(matches!(fault, Some(Fault::WrongCount)));
    let body = if matches!(fault, Some(Fault::Truncated)) { body[..body.len() / 2].to_vec() } else { body };
    let mut headers = vec![header("Link", &links.join(", "))];
    if endless != Some(false) {
        headers.push(header("X-Result-Count", &count.to_string()));
    }
    json_response(200, body, headers)
}

fn uuid(n: u32) -> String {
    format!("{n:08x}0f6a4d3c9a5e2f4b8c7d6e5f")
}

/// A marketplace resource as `marketplace-provider-resources` returns it (model `Resource`).
fn resource(n: u32, slug: &str, state: &str, customer: &str, project: &str, extra: Value) -> Value {
    let mut r = json!({
        "offering": format!("https://waldur.example.org/api/marketplace-provider-offerings/{OFFERING}/"),
        "offering_name": "Rocket HPC", "offering_uuid": OFFERING, "offering_type": "Marketplace.Slurm",
        "offering_shared": true, "offering_billable": true, "provider_name": "HPC Centre",
        "provider_uuid": "7e5d3c1b9a8f4e2d8c6b4a2f0e9d7c5b", "category_title": "HPC",
        "plan": null, "plan_unit": "month", "plan_name": null, "plan_uuid": null,
        "attributes": {"name": slug}, "limits": {"cpu": 10, "gres/gpu": 2},
        "uuid": uuid(n), "created": "2026-01-05T10:00:00.000000Z", "modified": "2026-11-30T08:00:00.000000Z",
        "url": format!("https://waldur.example.org/api/marketplace-resources/{}/", uuid(n)),
        "scope": null, "description": "", "state": state, "resource_uuid": null,
        "backend_id": format!("hpc_a_{slug}"), "effective_id": "", "resource_type": "SLURM.Allocation",
        "project": format!("https://waldur.example.org/api/projects/{project}0000000000000000000000/"),
        "project_uuid": format!("{:0<32}", hex(project)), "project_name": format!("Project {project}"),
        "project_description": "", "project_end_date": null, "project_slug": project,
        "customer_uuid": format!("{:0<32}", hex(customer)), "customer_name": format!("Customer {customer}"),
        "customer_slug": customer, "offering_slug": "rocket-hpc", "offering_backend_id": "rocket",
        "backend_metadata": {}, "is_usage_based": false, "is_limit_based": true,
        "name": format!("Allocation {slug}"), "slug": slug, "current_usages": {}, "can_terminate": true,
        "report": null, "end_date": null, "end_date_requested_by": null, "username": null,
        "limit_usage": {}, "downscaled": false, "restrict_member_access": false, "paused": false,
        "endpoints": [], "error_message": "", "error_traceback": "", "options": null,
        "available_actions": ["update_limits", "terminate"], "last_sync": "2026-12-01T00:00:00.000000Z",
        "order_in_progress": null, "creation_order": null, "service_settings_uuid": "5a4b3c2d1e0f4a9b8c7d6e5f4a3b2c1d",
        "user_requires_reconsent": false, "renewal_date": null, "offering_state": "Active",
        "offering_components": [], "has_api_keys": false
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut r, extra) {
        m.extend(e);
    }
    r
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{:x}", b % 16)).collect()
}

/// A team member as `.../team/` returns it (model `ProjectUser`).
fn member(n: u32, username: &str, offering_username: Option<&str>, state: Option<&str>) -> Value {
    json!({
        "url": format!("https://waldur.example.org/api/users/{n:032x}/"), "uuid": format!("{n:032x}"),
        "username": username, "full_name": format!("User {username}"), "role": "PROJECT.MEMBER",
        "expiration_time": null, "offering_user_username": offering_username,
        "offering_user_state": state, "email": format!("{username}@example.org")
    })
}

/// An offering user as `marketplace-offering-users` returns it (model `OfferingUser`).
fn offering_user(n: u32, username: Option<&str>, state: &str) -> Value {
    json!({
        "url": format!("https://waldur.example.org/api/marketplace-offering-users/{n:032x}/"),
        "uuid": format!("{:032x}", n + 1000), "user": format!("https://waldur.example.org/api/users/{n:032x}/"),
        "offering": format!("https://waldur.example.org/api/marketplace-public-offerings/{OFFERING}/"),
        "username": username, "offering_uuid": OFFERING, "offering_name": "Rocket HPC",
        "user_uuid": format!("{n:032x}"), "user_username": format!("waldur-{n}"), "user_full_name": format!("User {n}"),
        "created": "2026-02-01T09:00:00.000000Z", "modified": "2026-02-01T09:05:00.000000Z",
        "customer_uuid": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "customer_name": "University",
        "is_restricted": false, "state": state, "runtime_state": "", "service_provider_comment": "",
        "has_consent": true, "requires_reconsent": false, "offering_has_active_tos": false,
        "has_compliance_checklist": false, "is_profile_complete": true, "missing_profile_attributes": []
    })
}

/// Six resources (five live, so three pages of two; one Terminated, filtered out by the server),
/// one with an empty team; four offering users (two pages).
fn site() -> World {
    let mut w = World {
        resources: vec![
            resource(1, "genome", "OK", "tartu", "bio", json!({})),
            resource(2, "climate", "OK", "tartu", "geo", json!({"paused": true})),
            resource(3, "docking", "Erred", "taltech", "chem", json!({})),
            resource(4, "empty", "OK", "taltech", "chem", json!({})),
            resource(5, "legacy", "Terminated", "taltech", "chem", json!({})),
            resource(6, "upgrade", "Updating", "taltech", "phys", json!({"limits": {"cpu": 20, "storage": 5}})),
        ],
        ..World::default()
    };
    w.teams.insert(
        uuid(1),
        vec![member(1, "alice@uni", Some("alice"), Some("OK")), member(2, "bob@uni", Some("bob"), Some("OK"))],
    );
    w.teams.insert(uuid(2), vec![member(1, "alice@uni", Some("alice"), Some("OK"))]);
    w.teams.insert(uuid(3), vec![member(3, "carol@uni", Some("carol"), Some("OK")), member(4, "dave@uni", None, None)]);
    w.teams.insert(uuid(4), vec![]);
    w.teams.insert(uuid(6), vec![member(5, "erin@uni", Some("erin"), Some("OK"))]);
    w.offering_users = vec![
        offering_user(1, Some("alice"), "OK"),
        offering_user(2, Some("bob"), "OK"),
        offering_user(3, Some("carol"), "OK"),
        offering_user(5, Some("erin"), "OK"),
    ];
    w
}

fn config(dir: &Path, port: u16, token: &str) -> PathBuf {
    config_at(dir, &format!("http://127.0.0.1:{port}/api/"), token)
}

fn config_at(dir: &Path, url: &str, token: &str) -> PathBuf {
    let path = dir.join("waldur-site-agent-config.yaml");
    std::fs::write(
        &path,
        format!(
            "timezone: UTC\nofferings:\n  - name: Rocket HPC\n    waldur_api_url: {url}\n    waldur_api_token: {token}\n    waldur_offering_uuid: {OFFERING}\n    backend_type: slurm\n    order_processing_backend: slurm\n    membership_sync_backend: slurm\n    backend_settings:\n      default_account: hpc_default\n      root_account: hpc_customers\n      customer_prefix: hpc_c_\n      project_prefix: hpc_p_\n      allocation_prefix: hpc_a_\n      cluster_name: rocket\n      qos_default: normal\n      qos_paused: paused\n    backend_components:\n      cpu: {{measured_unit: k-Hours, accounting_type: limit, unit_factor: 60000}}\n      gres/gpu: {{measured_unit: Hours, accounting_type: limit, unit_factor: 60}}\n"
        ),
    )
    .unwrap();
    path
}

/// Every file under `dir`, recursively: relative path -> contents.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Run slurmplan; the token must appear in neither stream nor any file under `tmp`, the
/// config excepted.
fn run(tmp: &Path, args: &[&str]) -> Run {
    run_env(tmp, args, &[])
}

/// slurmplan with `args`, no proxy variable of the machine, then `env`.
fn command(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_slurmplan"));
    c.args(args).env("TMPDIR", tmp.join("tmp")).stdin(std::process::Stdio::null());
    // The local server is reached directly, whatever proxy the machine has.
    for v in PROXY_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c
}

const PROXY_VARS: [&str; 8] =
    ["ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"];

fn run_env(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let o = command(tmp, args, env).output().unwrap();
    checked(tmp, o.status.code().unwrap_or(-1), &o.stdout, &o.stderr)
}

/// A run's result, after checking that no piece of the token is in its output or its files.
fn checked(tmp: &Path, code: i32, stdout: &[u8], stderr: &[u8]) -> Run {
    let r = Run {
        code,
        stdout: String::from_utf8_lossy(stdout).into_owned(),
        stderr: String::from_utf8_lossy(stderr).into_owned(),
    };
    if let Some(piece) = token_piece(&r.stdout).or_else(|| token_piece(&r.stderr)) {
        panic!("token leaked (`{piece}`):\n{}\n{}", r.stdout, r.stderr);
    }
    for (name, bytes) in files(tmp) {
        if !name.ends_with("waldur-site-agent-config.yaml") {
            assert!(!String::from_utf8_lossy(&bytes).contains(TOKEN), "token written to {name}");
        }
    }
    r
}

/// A run of 8 characters of the token in `text`, if any.
fn token_piece(text: &str) -> Option<&'static str> {
    (0..=TOKEN.len() - 8).map(|i| &TOKEN[i..i + 8]).find(|p| text.contains(p))
}

fn setup(w: World) -> (Waldur, tempfile::TempDir, PathBuf) {
    let server = Waldur::start(w);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("tmp")).unwrap();
    let cfg = config(tmp.path(), server.port, TOKEN);
    (server, tmp, cfg)
}

fn names(dir: &Path) -> Vec<String> {
    files(dir).into_keys().collect()
}

#[test]
fn fetch_writes_every_page_and_build_from_api_gives_the_same_desired_state() {
    let (server, tmp, cfg) = setup(site());
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("fetched 5 resource(s) in 3 page(s), 5 team(s) with 6 member(s), 4 offering user(s)"),
        "{}",
        r.stderr
    );
    let mut want = vec![
        "offering-users-00001.json".to_string(),
        "offering-users-00002.json".into(),
        "resources-00001.json".into(),
        "resources-00002.json".into(),
        "resources-00003.json".into(),
    ];
    want.extend([1, 2, 3, 4, 6].map(|n| format!("team-{}-00001.json", uuid(n))));
    want.sort();
    assert_eq!(names(&out), want);
    // the raw bodies: the empty team is `[]`, pages are the API's lists
    assert_eq!(std::fs::read_to_string(out.join(format!("team-{}-00001.json", uuid(4)))).unwrap(), "[]");
    let page3: Vec<Value> = serde_json::from_slice(&std::fs::read(out.join("resources-00003.json")).unwrap()).unwrap();
    assert_eq!(page3.len(), 1);
    assert_eq!(page3[0]["slug"], "upgrade");
    // the Terminated resource was filtered by the server, never asked for its team
    let log = server.requests();
    assert!(log.iter().all(|u| !u.contains(&uuid(5))), "{log:?}");
    assert!(log[0].contains("state=OK&state=Erred&state=Updating"), "{log:?}");
    // nothing left beside the export
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 3, "{:?}", names(tmp.path()));

    let a = tmp.path().join("a.yaml");
    let r = run(tmp.path(), &["waldur", "build", "--config", s(&cfg), "--export", s(&out), "-o", s(&a)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = tmp.path().join("b.yaml");
    let keep = tmp.path().join("kept");
    let r = run(
        tmp.path(),
        &[
            "waldur",
            "build",
            "--config",
            s(&cfg),
            "--from-api",
            "--keep-export",
            s(&keep),
            "-o",
            s(&b),
            "--page-size",
            "2",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let desired = std::fs::read_to_string(&b).unwrap();
    assert_eq!(desired, std::fs::read_to_string(&a).unwrap());
    assert_eq!(files(&keep), files(&out), "the kept export is the same fetch");
    for user in ["alice", "bob", "carol", "erin"] {
        assert!(desired.contains(user), "{user} missing:\n{desired}");
    }
    assert!(desired.contains("hpc_a_empty") && desired.contains("hpc_a_upgrade"), "{desired}");
    assert!(!desired.contains("hpc_a_legacy") && !desired.contains("dave"), "{desired}");

    // without --keep-export the fetched pages go to a private temporary directory, then away
    let c = tmp.path().join("c.yaml");
    let r = run(tmp.path(), &["waldur", "build", "--config", s(&cfg), "--from-api", "-o", s(&c), "-q"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("fetched 5") && !r.stderr.contains("wrote "), "--quiet: no summary\n{}", r.stderr);
    assert!(
        !r.stderr.contains("slurmplan-waldur-export-"),
        "messages name the pages, not the temporary directory:\n{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&c).unwrap(), desired);
    assert_eq!(names(&tmp.path().join("tmp")), Vec::<String>::new());
}

#[test]
fn a_second_fetch_replaces_the_export_as_a_whole() {
    let (server, tmp, cfg) = setup(site());
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // the offering shrinks to one resource: no stale pages or teams survive
    {
        let mut w = server.world.lock().unwrap();
        w.resources.truncate(1);
    }
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        names(&out),
        vec![
            "offering-users-00001.json".to_string(),
            "offering-users-00002.json".into(),
            "resources-00001.json".into(),
            format!("team-{}-00001.json", uuid(1))
        ]
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 3, "{:?}", names(tmp.path()));
}

/// Fetch once successfully, inject `fault` (or change the token), fetch again: the second run
/// fails and the first export is untouched, with no staging directory left behind.
fn fails_keeping_previous(fault: Option<(&str, Fault)>, token: &str, extra: &[&str]) -> Run {
    let (server, tmp, cfg) = setup(site());
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = files(&out);
    if let Some((part, f)) = fault {
        server.world.lock().unwrap().faults.push((part.to_string(), f));
    }
    let cfg = config(tmp.path(), server.port, token);
    let mut args = vec!["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"];
    args.extend_from_slice(extra);
    let r = run(tmp.path(), &args);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("`{}` was left as it was", out.display())), "{}", r.stderr);
    assert_eq!(files(&out), before, "the previous export changed");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 3, "{:?}", names(tmp.path()));
    // build --from-api fails the same way and writes nothing
    let d = tmp.path().join("desired.yaml");
    let mut args = vec!["waldur", "build", "--config", s(&cfg), "--from-api", "-o", s(&d), "--page-size", "2"];
    args.extend_from_slice(extra);
    let b = run(tmp.path(), &args);
    assert_eq!(b.code, 1, "{}", b.stderr);
    assert!(!d.exists());
    assert_eq!(names(&tmp.path().join("tmp")), Vec::<String>::new());
    r
}

#[test]
fn a_401_names_the_status_and_the_api_detail() {
    let r = fails_keeping_previous(None, "WRONG-TOKEN-not-this-one", &[]);
    assert!(r.stderr.contains("HTTP 401: Invalid token."), "{}", r.stderr);
    assert!(r.stderr.contains("check `waldur_api_token`"), "{}", r.stderr);
    assert!(!r.stderr.contains("WRONG-TOKEN"), "the wrong token is a secret too:\n{}", r.stderr);
    assert!(!r.stderr.contains("waldur-retry"), "a 401 is not retried:\n{}", r.stderr);
}

#[test]
fn a_500_then_success_is_retried() {
    let (server, tmp, cfg) = setup(site());
    server.world.lock().unwrap().faults.push(("page=2&".into(), Fault::Status500 { times: 1 }));
    server.world.lock().unwrap().faults.push((format!("{}/team/", uuid(3)), Fault::Status500 { times: 1 }));
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("warning[waldur-retry]: GET http://127.0.0.1:"), "{}", r.stderr);
    assert!(r.stderr.contains("HTTP 500: <h1>Server Error (500)</h1>; try 2 of 4 in 1 s"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{}/team/?page=1&page_size=2: HTTP 500", uuid(3))),
        "a team's retry is reported too:\n{}",
        r.stderr
    );
    assert_eq!(names(&out).len(), 10, "{:?}", names(&out));
    let log = server.requests();
    assert_eq!(
        log.iter().filter(|u| u.contains("marketplace-provider-resources/?") && u.contains("page=2&")).count(),
        2
    );
}

#[test]
fn a_500_every_time_fails_after_the_retries() {
    let r = fails_keeping_previous(Some(("page=2&", Fault::Status500 { times: 99 })), TOKEN, &["--retries", "1"]);
    assert!(r.stderr.contains("failed 2 time(s)\n  caused by: HTTP 500"), "{}", r.stderr);
}

#[test]
fn a_truncated_body_is_retried_then_fails() {
    let r = fails_keeping_previous(Some(("marketplace-offering-users/", Fault::Truncated)), TOKEN, &["--retries", "1"]);
    assert!(
        r.stderr.contains("failed 2 time(s)\n  caused by: the body ends in the middle of the JSON"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_wrong_total_count_is_refused() {
    let r = fails_keeping_previous(Some(("marketplace-provider-resources/?", Fault::WrongCount)), TOKEN, &[]);
    assert!(
        r.stderr.contains("the resources list announced 6 item(s) (`X-Result-Count`) but 5 arrived"),
        "{}",
        r.stderr
    );
}

#[test]
fn fetch_refuses_to_replace_a_directory_that_is_not_an_export() {
    let (_server, tmp, cfg) = setup(site());
    let out = tmp.path().join("home");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("holds `notes.txt`, which is not part of a Waldur export"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
}

#[test]
fn plain_http_to_another_host_is_refused_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), 1, TOKEN);
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("http://127.0.0.1:1/api/", "http://waldur.example.org/api/");
    std::fs::write(&cfg, text).unwrap();
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&tmp.path().join("x"))]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("is plain http to another host"), "{}", r.stderr);
}

#[test]
fn usage_errors() {
    let r = slurmplan(&["waldur", "build", "--config", "c.yaml", "-o", "d.yaml"]);
    assert_eq!(r.code, 64, "neither --export nor --from-api:\n{}", r.stderr);
    let r = slurmplan(&["waldur", "build", "--config", "c.yaml", "--export", "e", "--from-api", "-o", "d.yaml"]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    let r =
        slurmplan(&["waldur", "build", "--config", "c.yaml", "--export", "e", "--keep-export", "k", "-o", "d.yaml"]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    let r = slurmplan(&["waldur", "fetch", "--config", "c.yaml", "--out", "e", "--page-size", "301"]);
    assert_eq!(r.code, 64, "{}", r.stderr);
}

/// A TLS terminator in front of the local Waldur (as a reverse proxy is in front of a real one):
/// accepts TLS with `tests/data/waldur-tls/server.pem` on its own port and passes the decrypted
/// bytes both ways to `plain_port`. Returns its port.
fn tls_front(plain_port: u16) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = root().join("tests/data/waldur-tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join("server.pem")).unwrap().collect::<Result<_, _>>().unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let _ = pipe(client, plain_port, config);
            });
        }
    });
    port
}

fn pipe(mut client: TcpStream, plain_port: u16, config: Arc<rustls::ServerConfig>) -> std::io::Result<()> {
    use std::io::ErrorKind::WouldBlock;
    let mut tls = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut upstream = TcpStream::connect(("127.0.0.1", plain_port))?;
    client.set_nonblocking(true)?;
    upstream.set_nonblocking(true)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let mut idle = true;
        match tls.read_tls(&mut client) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                idle = false;
                tls.process_new_packets().map_err(std::io::Error::other)?;
            }
            Err(e) if e.kind() == WouldBlock => {}
            Err(e) => return Err(e),
        }
        loop {
            match tls.reader().read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    idle = false;
                    upstream.set_nonblocking(false)?;
                    upstream.write_all(&buf[..n])?;
                    upstream.set_nonblocking(true)?;
                }
                Err(e) if e.kind() == WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        match upstream.read(&mut buf) {
            Ok(0) => {
                tls.send_close_notify();
                client.set_nonblocking(false)?;
                while tls.wants_write() {
                    tls.write_tls(&mut client)?;
                }
                return Ok(());
            }
            Ok(n) => {
                idle = false;
                tls.writer().write_all(&buf[..n])?;
            }
            Err(e) if e.kind() == WouldBlock => {}
            Err(e) => return Err(e),
        }
        if tls.wants_write() {
            idle = false;
            client.set_nonblocking(false)?;
            while tls.wants_write() {
                tls.write_tls(&mut client)?;
            }
            client.set_nonblocking(true)?;
        }
        if idle {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

#[test]
fn tls_is_verified_and_ca_cert_names_the_private_ca() {
    let (server, tmp, _) = setup(site());
    let port = tls_front(server.port);
    let cfg = config_at(tmp.path(), &format!("https://127.0.0.1:{port}/api/"), TOKEN);
    let out = tmp.path().join("export");
    let tls = root().join("tests/data/waldur-tls");
    let fetch = |extra: &[&str]| {
        let mut args = vec!["waldur", "fetch", "--config", s(&cfg), "--out", s(&out)];
        args.extend_from_slice(extra);
        run(tmp.path(), &args)
    };
    // the built-in roots do not know the private CA; nor does another CA
    for extra in [vec![], vec!["--ca-cert", s(&tls.join("other-ca.pem"))]] {
        let r = fetch(&extra);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("TLS failed"), "{}", r.stderr);
        assert!(r.stderr.contains("--ca-cert FILE"), "{}", r.stderr);
        assert!(!r.stderr.contains("waldur-retry"), "a certificate problem is not retried:\n{}", r.stderr);
        assert!(!out.exists());
    }
    assert!(server.requests().is_empty(), "no request passed an unverified connection");
    let r = fetch(&["--ca-cert", s(&tls.join("README.md"))]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("holds no certificate"), "{}", r.stderr);
    let r = fetch(&["--ca-cert", s(&tls.join("ca.pem"))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(&out).len(), 7, "one page each at the default page size: {:?}", names(&out));
}

#[test]
fn a_connection_cut_short_times_out_and_is_retried() {
    // Content-Length promises more than arrives and the connection stays open: only the
    // per-request timeout ends the wait.
    let server = Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let served = Arc::new(Mutex::new(0usize));
    let count = served.clone();
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            *count.lock().unwrap() += 1;
            let body = b"[{\"uuid\": \"0000".to_vec();
            let resp = Response::new(
                StatusCode(200),
                vec![header("Content-Type", "application/json")],
                Cursor::new(body),
                Some(4096),
                None,
            );
            let _ = req.respond(resp);
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("tmp")).unwrap();
    let cfg = config(tmp.path(), port, TOKEN);
    let out = tmp.path().join("export");
    let started = std::time::Instant::now();
    let r = run(
        tmp.path(),
        &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--http-timeout", "1", "--retries", "1"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("failed 2 time(s)"), "{}", r.stderr);
    assert!(r.stderr.contains("warning[waldur-retry]"), "{}", r.stderr);
    assert_eq!(*served.lock().unwrap(), 2);
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the timeout did not end the wait");
    assert!(!out.exists());
}

#[test]
fn a_failing_team_request_stops_the_fetch() {
    let mut w = site();
    w.teams.remove(&uuid(3));
    let (_server, tmp, cfg) = setup(w);
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--jobs", "3"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "{}/team/?page=1&page_size=100: HTTP 404: No Resource matches the given query.",
            uuid(3)
        )),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2, "{:?}", names(tmp.path()));
}

#[test]
fn urls_whose_host_is_not_this_machine_are_refused_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("tmp")).unwrap();
    let with_token = format!("https://slurmplan:{TOKEN}@waldur.example.org/api/");
    for (url, shown, why) in [
        ("http://127.0.0.1@evil.example/api/", "http://<userinfo>@evil.example/api/", "has a user name or password"),
        ("http://localhost:1@evil.example/api/", "http://<userinfo>@evil.example/api/", "has a user name or password"),
        ("http://127.evil.example/api/", "http://127.evil.example/api/", "is plain http to another host"),
        (with_token.as_str(), "https://<userinfo>@waldur.example.org/api/", "has a user name or password"),
    ] {
        let cfg = config_at(tmp.path(), url, TOKEN);
        let out = tmp.path().join("x");
        let desired = tmp.path().join("d.yaml");
        for args in [
            vec!["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--retries", "0"],
            vec!["waldur", "build", "--config", s(&cfg), "--from-api", "-o", s(&desired), "--retries", "0"],
        ] {
            let r = run(tmp.path(), &args);
            assert_eq!(r.code, 1, "{url}: {}", r.stderr);
            assert!(r.stderr.contains(&format!("waldur_api_url` `{shown}` {why}")), "{url}: {}", r.stderr);
            assert!(!r.stderr.contains("GET "), "no request was made: {}", r.stderr);
            assert!(!out.exists() && !desired.exists());
        }
    }
}

/// A listener that counts the connections it gets and answers none of them.
fn trap() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(c);
        }
    });
    (url, seen)
}

#[test]
fn plain_http_to_this_machine_never_goes_through_a_proxy() {
    let (server, tmp, cfg) = setup(site());
    let (proxy, seen) = trap();
    let env: Vec<(&str, &str)> = PROXY_VARS[..6].iter().map(|v| (*v, proxy.as_str())).collect();
    let out = tmp.path().join("export");
    let args = ["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--http-timeout", "5", "--retries", "0"];
    let r = run_env(tmp.path(), &args, &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(seen.load(Ordering::SeqCst), 0, "a proxy got a connection (and would have read the token)");
    assert!(!server.requests().is_empty());
}

/// An http CONNECT proxy: records what each client connection sends (the CONNECT head, then
/// the tunnel's bytes) and pipes the tunnel to the host and port asked for.
fn connect_proxy() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            let record = record.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let i = record.lock().unwrap().len();
                record.lock().unwrap().push(head.clone());
                let text = String::from_utf8_lossy(&head).into_owned();
                let Some(target) = text.strip_prefix("CONNECT ").and_then(|t| t.split(' ').next()) else { return };
                let Ok(mut upstream) = TcpStream::connect(target) else { return };
                let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                let (mut from_up, mut to_client) = (upstream.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || std::io::copy(&mut from_up, &mut to_client));
                let mut buf = [0u8; 16384];
                while let Ok(n) = client.read(&mut buf) {
                    if n == 0 || upstream.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    record.lock().unwrap()[i].extend_from_slice(&buf[..n]);
                }
                let _ = upstream.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (url, seen)
}

#[test]
fn https_goes_through_the_https_proxy_by_connect_and_the_token_stays_inside_tls() {
    let (server, tmp, _) = setup(site());
    let tls_port = tls_front(server.port);
    let cfg = config_at(tmp.path(), &format!("https://127.0.0.1:{tls_port}/api/"), TOKEN);
    let ca = root().join("tests/data/waldur-tls/ca.pem");
    let out = tmp.path().join("export");
    let args = [
        "waldur",
        "fetch",
        "--config",
        s(&cfg),
        "--out",
        s(&out),
        "--ca-cert",
        s(&ca),
        "--http-timeout",
        "5",
        "--retries",
        "0",
    ];
    let (proxy, seen) = connect_proxy();
    let (trap, trapped) = trap();
    // HTTPS_PROXY is used, with CONNECT; HTTP_PROXY is for http URLs
    let r = run_env(tmp.path(), &args, &[("HTTPS_PROXY", &proxy), ("HTTP_PROXY", &trap), ("http_proxy", &trap)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for conn in &seen {
        let text = String::from_utf8_lossy(conn);
        assert!(text.starts_with(&format!("CONNECT 127.0.0.1:{tls_port} HTTP/1.1\r\n")), "{text}");
        assert!(!text.contains(TOKEN) && !text.contains("Authorization"), "the proxy read the request: {text}");
    }
    assert!(server.requests().len() >= 7, "{:?}", server.requests());
    // HTTP_PROXY alone, or a proxy for a host NO_PROXY names: straight to the server
    for env in [vec![("HTTP_PROXY", trap.as_str())], vec![("https_proxy", &trap), ("no_proxy", "localhost,127.0.0.1")]]
    {
        let r = run_env(tmp.path(), &args, &env);
        assert_eq!(r.code, 0, "{env:?}: {}", r.stderr);
    }
    assert_eq!(trapped.load(Ordering::SeqCst), 0);
    // what ureq would skip silently is an error
    let r = run_env(tmp.path(), &args, &[("ALL_PROXY", "socks5://proxyuser:hunter2@127.0.0.1:1")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("`ALL_PROXY` is a Socks5 proxy"), "{}", r.stderr);
    assert!(!r.stderr.contains("hunter2"), "{}", r.stderr);
}

#[test]
fn a_server_that_always_announces_a_next_page_is_stopped() {
    let users =
        |server: &Waldur| server.requests().iter().filter(|u| u.contains("marketplace-offering-users/")).count();
    // with `X-Result-Count` 4: page 3 brings a 5th and 6th user
    let (server, tmp, cfg) = setup(site());
    server
        .world
        .lock()
        .unwrap()
        .faults
        .push(("marketplace-offering-users/".into(), Fault::EndlessNext { count: true }));
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "GET http://127.0.0.1:{}/api/marketplace-offering-users/?offering_uuid={OFFERING}&page=3&page_size=2: the offering users list announced 4 item(s) (`X-Result-Count`) but 6 arrived by page 3",
            server.port
        )),
        "{}",
        r.stderr
    );
    assert_eq!(users(&server), 3);
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2, "{:?}", names(tmp.path()));
    // without a total: the first empty page ends the list
    let (server, tmp, cfg) = setup(site());
    server
        .world
        .lock()
        .unwrap()
        .faults
        .push(("marketplace-offering-users/".into(), Fault::EndlessNext { count: false }));
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--page-size", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("4 offering user(s)"), "{}", r.stderr);
    assert_eq!(users(&server), 3);
    assert_eq!(std::fs::read_to_string(out.join("offering-users-00003.json")).unwrap(), "[]");
    assert!(!out.join("offering-users-00004.json").exists());
}

#[test]
fn a_401_that_quotes_the_token_shows_no_piece_of_it_at_any_offset() {
    let server = Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let offset = Arc::new(AtomicUsize::new(0));
    let at = offset.clone();
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let k = at.load(Ordering::SeqCst);
            let pad = "x".repeat(k);
            let (body, kind) = match k % 4 {
                0 => (
                    json!({ "detail": format!("{pad} Authorization: Token {TOKEN} is not valid") }).to_string(),
                    "application/json",
                ),
                1 => (format!("<html>{pad}Token {TOKEN}</html>"), "text/html"),
                2 => (json!({ "detail": format!("{pad}Token {}", &TOKEN[..24]) }).to_string(), "application/json"),
                _ => (format!("{pad}Authorization=Token%20{}%0D%0A", TOKEN.to_ascii_uppercase()), "text/plain"),
            };
            let mut r = Response::from_data(body.into_bytes()).with_status_code(StatusCode(401));
            r.add_header(header("Content-Type", kind));
            let _ = req.respond(r);
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("tmp")).unwrap();
    let cfg = config(tmp.path(), port, TOKEN);
    let out = tmp.path().join("export");
    // the detail is cut after 200 characters: the token straddles that point somewhere here
    for k in 140..=230 {
        offset.store(k, Ordering::SeqCst);
        let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--retries", "0"]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("HTTP 401: "), "{}", r.stderr);
    }
    offset.store(8, Ordering::SeqCst);
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out), "--retries", "0"]);
    assert!(r.stderr.contains("HTTP 401: xxxxxxxx Authorization: Token <redacted> is not valid"), "{}", r.stderr);
}

#[test]
fn sigterm_or_sigint_during_a_fetch_removes_the_partial_pages() {
    let (server, tmp, cfg) = setup(site());
    let out = tmp.path().join("export");
    let r = run(tmp.path(), &["waldur", "fetch", "--config", s(&cfg), "--out", s(&out)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = files(&out);
    server.world.lock().unwrap().faults.push(("/team/".into(), Fault::Hang));
    let desired = tmp.path().join("desired.yaml");
    for (sig, name, args) in [
        ("-TERM", "SIGTERM", vec!["waldur", "fetch", "--config", s(&cfg), "--out", s(&out)]),
        ("-INT", "SIGINT", vec!["waldur", "build", "--config", s(&cfg), "--from-api", "-o", s(&desired)]),
    ] {
        let teams = server.requests().iter().filter(|u| u.contains("/team/")).count();
        let child = command(tmp.path(), &args, &[])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let partial = if name == "SIGTERM" {
            tmp.path().join(format!(".export.partial-{}", child.id()))
        } else {
            tmp.path().join(format!("tmp/slurmplan-waldur-export-{}", child.id()))
        };
        // the resources are written; the teams are asked for and never come
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while server.requests().iter().filter(|u| u.contains("/team/")).count() == teams {
            assert!(std::time::Instant::now() < deadline, "no team request");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(partial.join("resources-00001.json").exists(), "{}", partial.display());
        let started = std::time::Instant::now();
        let kill = std::process::Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
        assert!(kill.success());
        let o = child.wait_with_output().unwrap();
        let r = checked(tmp.path(), o.status.code().unwrap_or(-1), &o.stdout, &o.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "the run waited for the server");
        assert_eq!(r.code, 1, "{name}: {:?} {}", o.status, r.stderr);
        assert!(r.stderr.contains(&format!("error: stopped by {name}")), "{}", r.stderr);
        assert!(!partial.exists(), "{name} left {}", partial.display());
        assert_eq!(files(&out), before, "the previous export changed");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 3, "{:?}", names(tmp.path()));
        assert_eq!(names(&tmp.path().join("tmp")), Vec::<String>::new());
        assert!(!desired.exists());
    }
}

#[test]
fn a_page_that_quotes_the_token_back_is_not_written() {
    let r = fails_keeping_previous(Some(("marketplace-provider-resources/?", Fault::EchoToken)), TOKEN, &[]);
    assert!(
        r.stderr.contains("page=1&page_size=2: the response holds the API token; it is not written"),
        "{}",
        r.stderr
    );
}

/// `reconcile` with `--agent-config` and no `-d`: each cycle builds the desired state from the
/// API (as `waldur build --from-api`), keeps it in the state directory, and says the build's
/// warnings only when the build changed; the token is in no output and no file it writes.
#[test]
fn reconcile_builds_from_the_api_and_warns_only_when_the_build_changes() {
    let (_server, tmp, cfg) = setup(site());
    let state = tmp.path().join("fake");
    copy_example_state(&state);
    let fake = common::cli::dev_bin("slurmplan-fake-sacctmgr");
    let sd = tmp.path().join("sd");
    let locks = tmp.path().join("locks");
    let metrics = tmp.path().join("m.prom");
    let args = [
        "--agent-config",
        s(&cfg),
        "--sacctmgr",
        s(&fake),
        "reconcile",
        "--state-dir",
        s(&sd),
        "--lock-dir",
        s(&locks),
        "--metrics",
        s(&metrics),
    ];
    let env = [("FAKE_SACCTMGR_DIR", s(&state))];
    let first = run_env(tmp.path(), &args, &env);
    assert!(first.code == 0, "{}", first.stderr);
    assert!(first.stderr.contains("warning["), "the first build's warnings are said: {}", first.stderr);
    let built = std::fs::read_to_string(sd.join("desired.yaml")).unwrap();
    assert!(built.contains("hpc_a_genome") || built.contains("genome"), "{built}");
    let second = run_env(tmp.path(), &args, &env);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(!second.stderr.contains("warning["), "an unchanged build is quiet: {}", second.stderr);
    assert_eq!(std::fs::read_to_string(sd.join("desired.yaml")).unwrap(), built);
}
