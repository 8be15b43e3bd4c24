//! `--transport rest` through the real binary against a local HTTP server that answers like
//! slurmrestd 24.11.5: the bodies are the verbatim answers in crates/rest/tests/data/2411 (taken
//! from a real bed, beside sacctmgr's output of the same slurmdbd), chosen by path and query as
//! slurmrestd does; `/openapi/v3` lists the paths of the data parsers offered (the real document
//! is 1 MB; only its `paths` keys are read). A request without the right `X-SLURM-USER-NAME` and
//! `X-SLURM-USER-TOKEN` gets a 401. Faults are injected per test: parsers slurmplan does not
//! read, a warning in a 200, a 401 quoting the token, a cut body, no answer at all. Every run
//! asserts that the token appears nowhere in what slurmplan prints. The same reads against a
//! real slurmrestd: tests/rest_real.rs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tiny_http::{Header, Response, Server};

mod common;
use common::cli::{Run, run, s, slurmplan_cmd};

/// `{"alg":"HS256"}.{"sun":"root","exp":1}.<signature>`: a token of user root.
const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290IiwiZXhwIjoxfQ.c2lnbmF0dXJlLW5vdC1jaGVja2Vk";
/// The same claims, another signature: the token after a rotation (also accepted).
const TOKEN2: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290IiwiZXhwIjoxfQ.cm90YXRlZC1zaWduYXR1cmU";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/rest/tests/data/2411").join(name)
}

/// What a test changes in the answers.
#[derive(Clone, Default)]
struct Faults {
    /// Data parsers `/openapi/v3` offers (default: v0.0.40-v0.0.42, as 24.11).
    parsers: Option<Vec<&'static str>>,
    /// A warning put into the QoS answer (a 200).
    qos_warning: bool,
    /// Every request answered 401, quoting the token it got.
    unauthorized_echo: bool,
    /// The plain association read of `testcl2` cut in the middle.
    cut: bool,
    /// The plain association read of `testcl2` never answered.
    hang: bool,
    /// The token of each `GET /openapi/v3` (a data parser negotiation), in order.
    negotiations: Option<Arc<std::sync::Mutex<Vec<String>>>>,
}

/// The file slurmrestd's answer to `url` is in.
fn file_for(url: &str) -> Option<String> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let rest = path.strip_prefix("/slurmdb/v0.0.42/")?;
    Some(match rest {
        "clusters/" => "clusters.json".into(),
        "accounts/" => "accounts.json".into(),
        "qos/" => "qos.json".into(),
        "associations/" => {
            let cluster = query.split('&').find_map(|kv| kv.strip_prefix("cluster="))?;
            let kind = if query.contains("Filter%20to%20only%20defaults=true") {
                "assocs-defaults-"
            } else if query.contains("Include%20the%20raw%20QOS%20or%20delta_qos=true") {
                "assocs-raw-"
            } else if query.contains("Exclude%20limits%20from%20parents=true") {
                "assocs-wopl-"
            } else {
                "assocs-"
            };
            format!("{kind}{cluster}.json")
        }
        _ => return None,
    })
}

fn json(code: u16, body: String) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_string(body)
        .with_status_code(code)
        .with_header(Header::from_bytes("Content-Type", "application/json").unwrap())
}

/// Serve until the process ends; the base URL.
fn serve(faults: Faults) -> String {
    let server = Arc::new(Server::http("127.0.0.1:0").unwrap());
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let faults = faults.clone();
            std::thread::spawn(move || answer(req, &faults));
        }
    });
    url
}

fn answer(req: tiny_http::Request, f: &Faults) {
    let header = |name: &'static str| {
        req.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str().to_string()).unwrap_or_default()
    };
    let (user, token) = (header("X-SLURM-USER-NAME"), header("X-SLURM-USER-TOKEN"));
    let url = req.url().to_string();
    if f.unauthorized_echo || user != "root" || (token != TOKEN && token != TOKEN2) {
        let body =
            format!(r#"{{"errors":[{{"description":"token {token} refused","error_number":1007}}],"warnings":[]}}"#);
        let _ = req.respond(json(401, body));
        return;
    }
    if url == "/openapi/v3" {
        if let Some(seen) = &f.negotiations {
            seen.lock().unwrap().push(token.clone());
        }
        let parsers = f.parsers.clone().unwrap_or(vec!["v0.0.40", "v0.0.41", "v0.0.42"]);
        let paths: Vec<String> = parsers
            .iter()
            .flat_map(|v| {
                ["associations/", "accounts/", "qos/", "clusters/"].map(|p| format!(r#""/slurmdb/{v}/{p}":{{}}"#))
            })
            .chain(std::iter::once(r#""/slurm/v0.0.42/ping/":{}"#.to_string()))
            .collect();
        let _ = req.respond(json(200, format!(r#"{{"openapi":"3.0.2","paths":{{{}}}}}"#, paths.join(","))));
        return;
    }
    let Some(file) = file_for(&url) else {
        let _ = req.respond(json(404, r#"{"errors":[{"description":"Unable to find requested URL"}]}"#.into()));
        return;
    };
    let mut body = std::fs::read_to_string(data(&file)).unwrap();
    if file == "assocs-testcl2.json" && f.hang {
        std::thread::sleep(Duration::from_secs(60));
    }
    if file == "assocs-testcl2.json" && f.cut {
        body.truncate(body.len() / 2);
    }
    if file == "qos.json" && f.qos_warning {
        body = body.replacen(
            r#""warnings": []"#,
            r#""warnings": [{"description": "Ignoring unknown field \"x\"", "source": "DATA_PARSER_QOS"}]"#,
            1,
        );
        assert!(body.contains("Ignoring unknown field"), "the fixture's warnings list moved");
    }
    let _ = req.respond(json(200, body));
}

fn token_file(dir: &Path) -> PathBuf {
    let p = dir.join("jwt");
    std::fs::write(&p, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// `slurmplan --transport rest ... dump -o DIR/snap` against `url`.
fn dump(url: &str, dir: &Path, extra: &[&str]) -> Run {
    let tf = token_file(dir);
    let out = dir.join("snap");
    let mut args = vec!["--transport", "rest", "--rest-url", url, "--rest-token-file", s(&tf)];
    args.extend_from_slice(extra);
    args.extend(["dump", "-o", s(&out)]);
    let r = run(slurmplan_cmd(&args).env_remove("SLURMPLAN_REST_USER").env_remove("SLURM_JWT"));
    for part in TOKEN.split('.') {
        assert!(!r.stdout.contains(part) && !r.stderr.contains(part), "the token was shown:\n{}{}", r.stdout, r.stderr);
    }
    r
}

#[test]
fn dump_through_slurmrestd_gives_the_state_sacctmgr_gives() {
    let dir = tempfile::tempdir().unwrap();
    let r = dump(&serve(Faults::default()), dir.path(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("(data parser v0.0.42, user root)"), "{}", r.stderr);
    let via_rest = slurmplan::sacctmgr::snapshot::load(&dir.path().join("snap")).unwrap();
    // sacctmgr's output of the same slurmdbd, read the way a snapshot is
    let sacct = dir.path().join("sacctmgr");
    std::fs::create_dir(&sacct).unwrap();
    let cat = |parts: &[&str]| parts.iter().map(|p| std::fs::read_to_string(data(p)).unwrap()).collect::<String>();
    let files = [
        ("clusters.txt", cat(&["sacctmgr-clusters.txt"])),
        ("assocs.txt", cat(&["sacctmgr-assocs-testcl.txt", "sacctmgr-assocs-testcl2.txt"])),
        ("defaults.txt", cat(&["sacctmgr-defaults-testcl.txt", "sacctmgr-defaults-testcl2.txt"])),
        ("accounts-descr.txt", cat(&["sacctmgr-accounts-descr.txt"])),
        ("accounts-org.txt", cat(&["sacctmgr-accounts-org.txt"])),
        ("qos.txt", cat(&["sacctmgr-qos.txt"])),
    ];
    let manifest = slurmplan::sacctmgr::snapshot::Manifest::new(
        Some("24.11.5".into()),
        "2026-12-06T00:00:00Z",
        vec!["testcl".into(), "testcl2".into()],
    );
    slurmplan::sacctmgr::snapshot::write_dir(&sacct, &files, &manifest).unwrap();
    let via_sacctmgr = slurmplan::sacctmgr::snapshot::load(&sacct).unwrap();
    assert_eq!(via_rest, via_sacctmgr);
}

#[test]
fn a_server_without_a_supported_parser_is_refused_with_what_it_offers() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve(Faults { parsers: Some(vec!["v0.0.40", "v0.0.41"]), ..Faults::default() });
    let r = dump(&url, dir.path(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("offers the slurmdb data parsers v0.0.40, v0.0.41; slurmplan reads v0.0.42"),
        "{}",
        r.stderr
    );
    assert!(!dir.path().join("snap").exists());
}

#[test]
fn a_warning_in_a_200_fails_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let r = dump(&serve(Faults { qos_warning: true, ..Faults::default() }), dir.path(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains(r#"warning: Ignoring unknown field \"x\" (DATA_PARSER_QOS)"#), "{}", r.stderr);
    assert!(!dir.path().join("snap").exists());
}

#[test]
fn a_refused_token_is_scrubbed_from_the_servers_words() {
    let dir = tempfile::tempdir().unwrap();
    let r = dump(&serve(Faults { unauthorized_echo: true, ..Faults::default() }), dir.path(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("HTTP 401"), "{}", r.stderr);
    assert!(r.stderr.contains("token <redacted> refused"), "{}", r.stderr);
}

#[test]
fn a_cut_body_and_a_server_that_never_answers_fail_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let r = dump(&serve(Faults { cut: true, ..Faults::default() }), dir.path(), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("an answer slurmplan cannot read"), "{}", r.stderr);

    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let r = dump(&serve(Faults { hang: true, ..Faults::default() }), dir.path(), &["--timeout", "2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(30), "the timeout did not hold: {:?}", t.elapsed());
    assert!(r.stderr.contains("timed out") || r.stderr.contains("imeout"), "{}", r.stderr);
    assert!(!dir.path().join("snap").exists());
}

#[test]
fn settings_are_checked_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let tf = token_file(dir.path());
    let go = |args: &[&str]| {
        run(slurmplan_cmd(args)
            .env_remove("SLURMPLAN_REST_URL")
            .env_remove("SLURMPLAN_REST_TOKEN_FILE")
            .env_remove("SLURMPLAN_REST_USER")
            .env_remove("SLURM_JWT"))
    };
    let r = go(&["--transport", "rest", "dump", "-o", s(&dir.path().join("a"))]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("needs slurmrestd's URL"), "{}", r.stderr);
    let r = go(&["--transport", "rest", "--rest-url", "http://127.0.0.1:9", "dump", "-o", s(&dir.path().join("a"))]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("needs a JWT"), "{}", r.stderr);
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "not a token").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = go(&[
        "--transport",
        "rest",
        "--rest-url",
        "http://127.0.0.1:9",
        "--rest-token-file",
        s(&bad),
        "dump",
        "-o",
        s(&dir.path().join("a")),
    ]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("does not hold a JWT"), "{}", r.stderr);
    // the token from SLURM_JWT is enough for a writing command to go on (to its journal)
    let r = run(slurmplan_cmd(&["--transport", "rest", "--rest-url", "http://127.0.0.1:9", "undo", "j.journal"])
        .env("SLURM_JWT", TOKEN)
        .env_remove("SLURMPLAN_REST_TOKEN_FILE"));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot read the journal `j.journal`"), "{}", r.stderr);
    // and without any token it stops before anything else
    let r = go(&["--transport", "rest", "--rest-url", "http://127.0.0.1:9", "undo", "j.journal"]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("needs a JWT"), "{}", r.stderr);
    // `--ca-cert` of a command that never reaches Waldur is `--rest-ca-cert`: a file without a
    // certificate stops it before anything is sent, two different files are refused, a CA
    // file is taken (the fake serves http, so it is read and not used)
    let via = |extra: &[&str]| {
        let mut args = vec!["--transport", "rest", "--rest-token-file", s(&tf)];
        args.extend_from_slice(extra);
        go(&args)
    };
    let snap = dir.path().join("snap");
    let r = via(&["--rest-url", "http://127.0.0.1:9", "dump", "-o", s(&snap), "--ca-cert", s(&bad)]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("`{}` holds no certificate", bad.display())), "{}", r.stderr);
    let tls = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/waldur-tls");
    let (ca, other) = (tls.join("ca.pem"), tls.join("other-ca.pem"));
    let r = via(&[
        "--rest-url",
        "http://127.0.0.1:9",
        "--rest-ca-cert",
        s(&ca),
        "dump",
        "-o",
        s(&snap),
        "--ca-cert",
        s(&other),
    ]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("--ca-cert and --rest-ca-cert name different files"), "{}", r.stderr);
    let url = serve(Faults::default());
    let r = via(&["--rest-url", &url, "dump", "-o", s(&snap), "--ca-cert", s(&ca)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let _ = tf;
}

/// The site agent's config in REST mode, with `rest_api` as given.
fn agent_config(dir: &Path, rest_api: &str) -> PathBuf {
    let p = dir.join("agent.yaml");
    std::fs::write(
        &p,
        format!(
            "offerings:\n  - name: hpc\n    waldur_api_url: https://waldur.example.org/api/\n    waldur_api_token: not-a-real-token\n    backend_type: slurm\n    backend_settings:\n      default_account: root\n      customer_prefix: c_\n      project_prefix: p_\n      allocation_prefix: a_\n      cluster_name: testcl\n      execution_mode: rest\n      rest_api:\n{rest_api}"
        ),
    )
    .unwrap();
    p
}

#[test]
fn the_agent_configs_rest_mode_reads_through_slurmrestd() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve(Faults::default());
    let tf = token_file(dir.path());
    let go = |cfg: &Path, env: &[(&str, &str)]| {
        let out = dir.path().join("snap");
        let _ = std::fs::remove_dir_all(&out);
        let mut c = slurmplan_cmd(&["--agent-config", s(cfg), "dump", "-o", s(&out)]);
        for v in ["SLURMPLAN_TRANSPORT", "SLURMPLAN_REST_URL", "SLURMPLAN_REST_TOKEN_FILE", "SLURMPLAN_REST_USER"] {
            c.env_remove(v);
        }
        c.env_remove("SLURM_JWT").env("SLURMPLAN_SACCTMGR", "/nonexistent/sacctmgr");
        for (k, v) in env {
            c.env(k, v);
        }
        (run(&mut c), out)
    };
    // url, username and token_file from the config: no flag, no sacctmgr
    let cfg = agent_config(
        dir.path(),
        &format!(
            "        url: {url}\n        username: root\n        token_file: {}\n        api_version: v0.0.43\n",
            s(&tf)
        ),
    );
    let (r, out) = go(&cfg, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("through slurmrestd at {url}")), "{}", r.stderr);
    assert!(r.stderr.contains("api_version` is not used"), "{}", r.stderr);
    assert!(out.join("assocs.txt").exists());
    // the token from the variable token_env names
    let cfg =
        agent_config(dir.path(), &format!("        url: {url}\n        username: root\n        token_env: SITE_JWT\n"));
    let (r, _) = go(&cfg, &[("SITE_JWT", TOKEN)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (r, _) = go(&cfg, &[]);
    assert_eq!(r.code, 64, "{}", r.stderr);
    assert!(r.stderr.contains("`SITE_JWT`, which is not set"), "{}", r.stderr);
    // --transport sacctmgr beats the config (and then sacctmgr is what runs)
    let mut c =
        slurmplan_cmd(&["--transport", "sacctmgr", "--agent-config", s(&cfg), "dump", "-o", s(&dir.path().join("x"))]);
    c.env_remove("SLURMPLAN_TRANSPORT").env("SLURMPLAN_SACCTMGR", "/nonexistent/sacctmgr");
    let r = run(&mut c);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/sacctmgr"), "{}", r.stderr);
    // what slurmplan refuses in the config: no TLS verification, no token source
    for (rest_api, says) in [
        (format!("        url: {url}\n        token_env: X\n        verify_ssl: false\n"), "always verifies"),
        (format!("        url: {url}\n        username: root\n"), "names no token"),
    ] {
        let cfg = agent_config(dir.path(), &rest_api);
        let (r, out) = go(&cfg, &[]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(!out.exists());
    }
    for part in TOKEN.split('.') {
        assert!(!r.stderr.contains(part), "{}", r.stderr);
    }
}

/// One command sets slurmrestd up once (a plan reads, then names the data parser in its
/// header: one negotiation); `reconcile --interval` sets it up again each cycle, so a token
/// file rotated while it runs is read by the next cycle.
#[test]
fn one_negotiation_per_command_and_per_reconcile_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let url = serve(Faults { negotiations: Some(seen.clone()), ..Default::default() });
    let tf = token_file(dir.path());
    let base = ["--transport", "rest", "--rest-url", url.as_str(), "--rest-token-file", s(&tf)];
    let cmd = |extra: &[&str]| {
        let mut c = slurmplan_cmd(&[&base[..], extra].concat());
        c.env_remove("SLURMPLAN_REST_USER").env_remove("SLURM_JWT");
        c
    };
    // the state as a desired file: a cycle then has nothing to write
    let desired = dir.path().join("desired.yaml");
    let r = run(&mut cmd(&["export"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(&desired, &r.stdout).unwrap();
    seen.lock().unwrap().clear();
    let r = run(&mut cmd(&["plan", "-d", s(&desired)]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with(&format!("Current state read through slurmrestd at {url} (data parser v0.0.42, user root).")),
        "{}",
        r.stdout
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "one plan, one negotiation");

    seen.lock().unwrap().clear();
    let locks = dir.path().join("locks");
    std::fs::create_dir(&locks).unwrap();
    std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o700)).unwrap();
    let sd = dir.path().join("sd");
    let child =
        cmd(&["reconcile", "-d", s(&desired), "--state-dir", s(&sd), "--lock-dir", s(&locks), "--interval", "200ms"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let wait_for = |what: &str, done: &dyn Fn(&[String]) -> bool| {
        let started = Instant::now();
        while !done(&seen.lock().unwrap()) {
            assert!(started.elapsed() < Duration::from_secs(60), "{what}: {:?}", seen.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for("a first cycle", &|t| t.iter().any(|t| t == TOKEN));
    // the token rotated in place (same file, still private)
    std::fs::write(&tf, format!("{TOKEN2}\n")).unwrap();
    wait_for("a cycle with the rotated token", &|t| t.iter().any(|t| t == TOKEN2));
    // By its PID (the child this test started).
    let kill = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for part in TOKEN.split('.').chain(TOKEN2.split('.').skip(2)) {
        assert!(!stdout.contains(part) && !stderr.contains(part), "the token was shown:\n{stdout}{stderr}");
    }
}
