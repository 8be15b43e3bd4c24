//! Specs for the Waldur builder: every config variant against the site1 export (snapshots that
//! must load as desired state), and the configuration / export errors.

use std::path::{Path, PathBuf};

use super::*;
use slurmplan_desired as desired;
use slurmplan_diag::Diagnostic;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/waldur")
}

fn config(text: &str) -> Result<(Settings, Vec<Diagnostic>), Vec<Diagnostic>> {
    load_config(Path::new("agent.yaml"), text, None)
}

fn errors(d: &[Diagnostic]) -> Vec<String> {
    d.iter().filter(|d| d.is_error()).map(|d| d.message.clone()).collect()
}

fn build_variant(name: &str) -> Built {
    let path = data().join("configs").join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (s, _) = load_config(&path, &text, None).unwrap_or_else(|d| panic!("{name}: {d:#?}"));
    let ex = load_pages(&data().join("site1/export")).unwrap();
    build(&s, &ex, &BuildOptions { cluster: Some("rocket".into()) }).unwrap_or_else(|d| panic!("{name}: {d:#?}"))
}

const VARIANTS: &[&str] =
    &["nested-common", "nested-individual", "flat-none", "skip-swap", "qos-management", "targets-partitions"];

#[test]
fn every_variant_builds_loads_and_matches_its_snapshot() {
    for v in VARIANTS {
        let b = build_variant(v);
        let d = desired::load_str(Path::new("out.yaml"), &b.yaml).unwrap_or_else(|e| panic!("{v}: {e:#?}\n{}", b.yaml));
        assert!(
            d.warnings.iter().all(|w| w.code == "undeclared-qos" || w.code == "undeclared-parent"),
            "{v}: {:#?}",
            d.warnings
        );
        assert!(!b.yaml.contains("SECRET"), "{v}");
        insta::assert_snapshot!(format!("variant_{v}"), b.yaml);
    }
}

#[test]
fn site1_counts_and_warnings() {
    let b = build_variant("nested-common");
    assert_eq!((b.resources, b.live, b.allocations), (21, 18, 17));
    let codes: Vec<&str> = b.warnings.iter().map(|w| w.code).collect();
    assert!(codes.contains(&"waldur-unnamed-resource"), "{codes:?}");
    assert!(codes.contains(&"waldur-component-dropped"), "{codes:?}");
    // Users in unusable offering-user states stay (the agent re-adds every team member), each
    // with a warning naming the user; the member without a username is a warning too.
    for u in ["ghost", "leaver", "broken", "newbie", "linking"] {
        assert!(b.yaml.contains(&format!("{{name: {u}, fairshare: parent}}")), "{u}");
    }
    for (u, st) in [("ghost", "Deleted"), ("leaver", "Deleting"), ("broken", "Error creating")] {
        assert!(
            b.warnings.iter().any(|w| w.code == "waldur-user-unusable"
                && w.message.contains(&format!("`{u}`"))
                && w.message.contains(st)),
            "{u}: {:#?}",
            b.warnings
        );
    }
    assert!(!b.warnings.iter().any(|w| w.code == "waldur-user-unusable" && w.message.contains("newbie")));
    assert!(
        b.warnings.iter().any(|w| w.code == "waldur-member-without-username"
            && w.message.contains("`nobody@example.org`")
            && w.message.contains("hpc_a_genome-2026")),
        "{:#?}",
        b.warnings
    );
    // terminated / terminating / creating resources are absent
    for gone in ["hpc_a_legacy", "hpc_a_docking", "hpc_a_cosmo"] {
        assert!(!b.yaml.contains(gone), "{gone}");
    }
}

#[test]
fn levers_land_where_the_spec_says() {
    let d = |v: &str| desired::load_str(Path::new("x.yaml"), &build_variant(v).yaml).unwrap();
    let n = |s: &str| slurmplan_model::Name::from_static(Box::leak(s.to_string().into_boxed_str()));
    // swap mode: paused -> qos_paused; active with attributes.qos -> [normal, gpu_long]
    let c = d("nested-common");
    let rocket = &c.clusters[&n("rocket")];
    let assembly = &rocket.accounts[&n("hpc_a_assembly")];
    // the agent never introduces a DefaultQOS; attributes.qos is not an account QoS
    assert_eq!(assembly.assoc.qos, slurmplan_model::QosList::Set([n("paused")].into()));
    assert_eq!(assembly.assoc.default_qos, None);
    let genome = &rocket.accounts[&n("hpc_a_genome-2026")];
    assert_eq!((genome.assoc.qos.display(), genome.assoc.default_qos.clone()), ("normal".to_string(), None));
    // every user association has Share=parent, as the agent's adds
    assert!(rocket.users.iter().all(|(_, a)| a.limits.fairshare == Some(slurmplan_model::values::Fairshare::Parent)));
    assert_eq!(rocket.accounts[&n("hpc_p_materials")].parent, n("hpc_c_taltech"));
    assert_eq!(rocket.defaults[&n("alice")], n("hpc_default"));
    assert!(rocket.accounts[&n("hpc_a_vision")].assoc == rocket.accounts[&n("hpc_a_vision")].assoc);
    assert!(!rocket.users.keys().any(|k| k.account == n("hpc_a_vision")), "restricted: no users");
    // skip_qos_swap: GrpSubmitJobs 0 when paused/downscaled, unset when active
    let c = d("skip-swap");
    let rocket = &c.clusters[&n("rocket")];
    assert_eq!(rocket.accounts[&n("hpc_a_assembly")].assoc.limits.grp_submit_jobs, Some(0));
    assert_eq!(rocket.accounts[&n("hpc_a_plasma")].assoc.limits.grp_submit_jobs, Some(0));
    assert_eq!(rocket.accounts[&n("hpc_a_lattice")].assoc.limits.grp_submit_jobs, None);
    assert!(rocket.accounts[&n("hpc_a_lattice")].assoc.qos.is_inherit());
    // qos_management + apply_limits_to_qos: the limits sit on the QoS
    let c = d("qos-management");
    let q = &c.qos[&n("hpc_a_lattice")];
    assert_eq!(q.grp_tres_mins.get("cpu"), Some(&3_000_000));
    assert!(q.flags.contains("denyonlimit") && q.flags.contains("nodecay"));
    let a = &c.clusters[&n("rocket")].accounts[&n("hpc_a_lattice")];
    assert!(a.assoc.limits.grp_tres_mins.is_empty());
    assert_eq!(a.assoc.default_qos, Some(n("hpc_a_lattice")));
    // target_components: cpu limit x factor on two TRES; partitions from attributes / default
    let c = d("targets-partitions");
    let rocket = &c.clusters[&n("rocket")];
    let t = &rocket.accounts[&n("hpc_a_lattice")].assoc.limits.grp_tres_mins;
    assert_eq!((t.get("cpu"), t.get("billing")), (Some(&3_000_000), Some(&1_500_000)));
    let parts: Vec<Option<String>> = rocket
        .users
        .keys()
        .filter(|k| k.account == n("hpc_a_lattice") && k.user == n("ivan"))
        .map(|k| k.partition.as_ref().map(|p| p.to_string()))
        .collect();
    assert_eq!(parts, vec![Some("cpu".to_string()), Some("gpu".to_string())]);
    assert!(rocket.users.keys().any(|k| k.account == n("hpc_a_swarm") && k.partition == Some(n("batch"))));
    // individual: no default named (the planner keeps the one the agent set last while valid);
    // flat: projects under parent_account, no defaults
    let c = d("nested-individual");
    assert!(c.clusters[&n("rocket")].defaults.is_empty());
    assert_eq!(c.scope.roots.iter().map(|r| r.to_string()).collect::<Vec<_>>(), vec!["hpc_customers"]);
    let c = d("flat-none");
    let rocket = &c.clusters[&n("rocket")];
    assert_eq!(rocket.accounts[&n("hpc_p_materials")].parent, n("hpc_flat"));
    assert!(rocket.defaults.is_empty());
    assert_eq!(c.scope.prefixes, vec!["hpc_c_", "hpc_p_", "hpc_a_"]);
}

#[test]
fn configuration_errors_are_reported_at_once_with_key_paths() {
    let e = config(
        r#"
offerings:
  - name: x
    waldur_api_token: SECRET-TOKEN-123
    backend_type: slurm
    backend_settings:
      default_account_policy: sometimes
      customer_prefix: c_
      qos_paused: paused
      qos_management: {skip_qos_swap: true, apply_limits_to_qos: true}
    backend_components:
      CPU: {unit_factor: 60000}
      gres/gpu: {unit_factor: 60, target_components: {"Bad Name": {factor: 1}}}
"#,
    )
    .unwrap_err();
    let msgs = errors(&e).join("\n");
    for needle in [
        "`offerings[0].backend_settings.default_account` is missing",
        "`offerings[0].backend_settings.project_prefix` is missing",
        "`offerings[0].backend_settings.allocation_prefix` is missing",
        "`offerings[0].backend_settings.default_account_policy` is `sometimes`",
        "`offerings[0].backend_settings.qos_management.skip_qos_swap` is true but `offerings[0].backend_settings.qos_paused` is set",
        "`offerings[0].backend_settings.qos_management.apply_limits_to_qos` requires `offerings[0].backend_settings.qos_management.enabled: true`",
        "`offerings[0].backend_components.CPU`: `CPU` is not a TRES name",
        "`offerings[0].backend_components.gres/gpu.target_components.Bad Name`",
    ] {
        assert!(msgs.contains(needle), "missing {needle:?} in\n{msgs}");
    }
    assert!(!format!("{e:?}").contains("SECRET-TOKEN-123"));
}

#[test]
fn apply_limits_to_qos_needs_skip_qos_swap_too() {
    let e = config(
        "offerings:\n- name: x\n  backend_type: slurm\n  backend_settings: {default_account: d, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_, qos_management: {enabled: true, apply_limits_to_qos: true}}\n",
    )
    .unwrap_err();
    assert_eq!(
        errors(&e),
        vec![
            "`offerings[0].backend_settings.qos_management.apply_limits_to_qos` requires `offerings[0].backend_settings.qos_management.skip_qos_swap: true`"
        ]
    );
}

#[test]
fn offering_choice() {
    let two = "offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: d, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_}}\n- {name: b, backend_type: slurm, backend_settings: {default_account: e, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_}}\n- {name: vm, backend_type: openstack}\n";
    let e = config(two).unwrap_err();
    assert!(e[0].message.contains("2 SLURM offerings"), "{e:?}");
    assert!(e[0].hint.as_deref().unwrap().contains("--offering"));
    let (s, _) = load_config(Path::new("a.yaml"), two, Some("b")).unwrap();
    assert_eq!((s.default_account.as_str(), s.index), ("e", 1));
    assert!(load_config(Path::new("a.yaml"), two, Some("vm")).unwrap_err()[0].message.contains("not a SLURM offering"));
    assert!(load_config(Path::new("a.yaml"), two, Some("zz")).unwrap_err()[0].message.contains("no offering named"));
}

#[test]
fn a_syntax_error_never_quotes_the_token() {
    let e = config("offerings:\n  - name: x\n    waldur_api_token: SECRET-TOKEN-123\n   backend_type: [slurm\n")
        .unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(!format!("{e:?}").contains("SECRET-TOKEN-123"), "{e:?}");
    assert!(e[0].location.as_ref().unwrap().line > 0);
}

fn export_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(d.path().join(name), text).unwrap();
    }
    d
}

#[test]
fn export_errors_name_file_position_resource_and_field() {
    let d = export_dir(&[
        ("resources-1.json", "[{\"uuid\": \"aa\", \"state\": \"OK\", \"slug\": \"x\"}]"),
        ("resources-2.json", "[\n  {\"uuid\": \"bb\",\n   \"state\": \"OK\" oops}]"),
        ("offering-users.json", "{\"detail\": \"Invalid token.\"}"),
    ]);
    let e = load_pages(d.path()).unwrap_err();
    let text: Vec<String> = e.iter().map(|d| d.to_string()).collect();
    let all = text.join("\n");
    assert!(all.contains("resources-2.json:3:"), "{all}");
    assert!(all.contains("malformed JSON"), "{all}");
    assert!(all.contains("offering-users.json") && all.contains("an API error object"), "{all}");
    assert!(all.contains("resource `aa` has no `project_slug`"), "{all}");
    assert!(all.contains("resource `aa` has no `customer_slug`"), "{all}");
}

#[test]
fn a_live_resource_without_a_team_file_is_an_error() {
    let d = export_dir(&[
        (
            "resources.json",
            r#"[{"uuid":"0123456789abcdef0123456789abcdef","state":"OK","slug":"x","project_uuid":"p","project_slug":"p","customer_uuid":"c","customer_slug":"c","limits":{},"unknown":1}]"#,
        ),
        ("offering-users.json", "[]"),
    ]);
    let ex = load_pages(d.path()).unwrap();
    let (s, _) = config("offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: d, root_account: top, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_, cluster_name: k}}\n").unwrap();
    let e = build(&s, &ex, &BuildOptions::default()).unwrap_err();
    assert!(e[0].message.contains("has no team file"), "{e:?}");
}

#[test]
fn zero_live_resources_still_build_and_missing_cluster_fails_clearly() {
    let d = export_dir(&[("resources.json", "[]"), ("offering-users.json", "[]")]);
    let ex = load_pages(d.path()).unwrap();
    let (s, _) = config("offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: d, root_account: top, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_}}\n").unwrap();
    let e = build(&s, &ex, &BuildOptions::default()).unwrap_err();
    assert!(e[0].message.contains("cluster_name` is not set"), "{e:?}");
    let b = build(&s, &ex, &BuildOptions { cluster: Some("k".into()) }).unwrap();
    assert_eq!(b.live, 0);
    desired::load_str(Path::new("x.yaml"), &b.yaml).unwrap();
}

#[test]
fn common_policy_with_root_as_default_account_is_refused() {
    let d = export_dir(&[("resources.json", "[]"), ("offering-users.json", "[]")]);
    let ex = load_pages(d.path()).unwrap();
    let (s, _) = config("offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: root, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_, cluster_name: k}}\n").unwrap();
    let e = build(&s, &ex, &BuildOptions::default()).unwrap_err();
    assert!(e.iter().any(|d| d.code == "waldur-default-root"), "{e:?}");
}

#[test]
fn duplicate_account_names_warn_and_keep_the_first() {
    let r = |u: &str| {
        format!(
            r#"{{"uuid":"{u}","state":"OK","backend_id":"a_same","project_uuid":"p","project_slug":"p","customer_uuid":"c","customer_slug":"c","limits":{{}}}}"#
        )
    };
    let u1 = "0123456789abcdef0123456789abcde1";
    let u2 = "0123456789abcdef0123456789abcde2";
    let d = export_dir(&[
        ("resources.json", &format!("[{},{}]", r(u1), r(u2))),
        ("offering-users.json", "[]"),
        (&format!("team-{u1}.json"), "[]"),
        (&format!("team-{u2}.json"), "[]"),
    ]);
    let ex = load_pages(d.path()).unwrap();
    let (s, _) = config("offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: d, root_account: top, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_, cluster_name: k, default_account_policy: none}}\n").unwrap();
    let b = build(&s, &ex, &BuildOptions::default()).unwrap();
    assert_eq!(b.allocations, 1);
    assert!(
        b.warnings.iter().any(|w| w.code == "waldur-duplicate-account" && w.message.contains(u2)),
        "{:#?}",
        b.warnings
    );
}

fn one_resource(limits: &str, team: &str) -> (tempfile::TempDir, Settings) {
    let u = "0123456789abcdef0123456789abcdef";
    let d = export_dir(&[
        (
            "resources.json",
            &format!(
                r#"[{{"uuid":"{u}","name":"R","state":"OK","slug":"x","project_uuid":"p","project_slug":"p","customer_uuid":"c","customer_slug":"c"{limits}}}]"#
            ),
        ),
        ("offering-users.json", "[]"),
        (&format!("team-{u}.json"), team),
    ]);
    let (s, _) = config("offerings:\n- {name: a, backend_type: slurm, backend_settings: {default_account: d, root_account: top, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_, cluster_name: k, default_partition: debug}, backend_components: {cpu: {unit_factor: 60000}, mem: {unit_factor: 61440}}}\n").unwrap();
    (d, s)
}

#[test]
fn missing_or_null_limits_are_errors_naming_the_resource_and_empty_limits_an_info() {
    for limits in ["", r#","limits":null"#] {
        let (d, _) = one_resource(limits, "[]");
        let e = load_pages(d.path()).unwrap_err();
        assert!(
            e.iter()
                .any(|d| d.code == "export-missing-limits" && d.message.contains("0123456789abcdef0123456789abcdef")),
            "{limits}: {e:#?}"
        );
    }
    let (d, s) = one_resource(r#","limits":{}"#, "[]");
    let b = build(&s, &load_pages(d.path()).unwrap(), &BuildOptions::default()).unwrap();
    assert!(b.infos.iter().any(|i| i.contains("has no limits (`{}`)") && i.contains("a_x")), "{:?}", b.infos);
    assert!(!b.yaml.contains("grp_tres_mins"));
}

#[test]
fn limits_that_round_to_zero_are_errors_and_zero_limits_warnings() {
    let (d, s) = one_resource(r#","limits":{"cpu":1e-7,"mem":0}"#, "[]");
    let e = build(&s, &load_pages(d.path()).unwrap(), &BuildOptions::default()).unwrap_err();
    assert!(
        e.iter().any(|d| d.is_error() && d.code == "waldur-limit-rounds-to-zero" && d.message.contains("`cpu`")),
        "{e:#?}"
    );
    assert!(
        e.iter().any(|d| !d.is_error() && d.code == "waldur-zero-limit" && d.message.contains("`mem` = 0")),
        "{e:#?}"
    );
    let (d, s) = one_resource(r#","limits":{"cpu":2,"mem":0}"#, "[]");
    let b = build(&s, &load_pages(d.path()).unwrap(), &BuildOptions::default()).unwrap();
    assert!(b.yaml.contains("grp_tres_mins: {cpu: 120000, mem: 0}"), "{}", b.yaml);
    assert!(b.warnings.iter().any(|w| w.code == "waldur-zero-limit"), "{:#?}", b.warnings);
}

#[test]
fn common_with_default_partition_declares_the_default_association_there_as_the_agent_adds_it() {
    let team = r#"[{"url":"u","uuid":"aa","username":"al@x","full_name":"Al","role":"PROJECT.MEMBER","expiration_time":null,"offering_user_username":"al","offering_user_state":"OK"},
                  {"url":"u","uuid":"bb","username":"nn@x","full_name":"No Name","role":"PROJECT.MEMBER","expiration_time":null,"offering_user_username":null,"offering_user_state":null}]"#;
    let (d, s) = one_resource(r#","limits":{"cpu":1}"#, team);
    let b = build(&s, &load_pages(d.path()).unwrap(), &BuildOptions::default()).unwrap();
    let c = desired::load_str(Path::new("x.yaml"), &b.yaml).unwrap();
    let k = &c.clusters[&slurmplan_model::Name::from_static("k")];
    let keys: Vec<String> = k.users.keys().map(|u| format!("{}@{}:{:?}", u.user, u.account, u.partition)).collect();
    assert_eq!(keys, vec!["al@a_x:Some(Name(\"debug\"))", "al@d:Some(Name(\"debug\"))"], "{}", b.yaml);
    // the agent's `add user ... Partition=P` has no `Share=parent` (its other adds do)
    assert!(b.yaml.contains("- {name: al, partition: debug}\n"), "{}", b.yaml);
    assert!(
        b.warnings.iter().any(|w| w.code == "waldur-member-without-username" && w.message.contains("`nn@x`")),
        "{:#?}",
        b.warnings
    );
}

#[test]
fn the_agents_rest_mode_is_checked_as_the_agent_checks_it() {
    let base = "offerings:\n- name: x\n  backend_type: slurm\n  backend_settings: {default_account: d, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_";
    let ok = config(&format!(
        "{base}, cluster_name: c1, execution_mode: rest, rest_api: {{url: 'https://r:6820', username: u, token_file: /etc/jwt}}}}\n"
    ))
    .unwrap();
    let rest = ok.0.rest.expect("rest settings");
    assert_eq!((rest.url.as_str(), rest.username.as_deref()), ("https://r:6820", Some("u")));
    assert_eq!(rest.token_file, Some(std::path::PathBuf::from("/etc/jwt")));
    assert_eq!(config(&format!("{base}, execution_mode: cli}}\n")).unwrap().0.rest, None);
    for (settings, says) in [
        (", execution_mode: rset", "execution_mode` is `rset`"),
        (", cluster_name: c1, execution_mode: rest", "rest_api` is missing"),
        (", execution_mode: rest, rest_api: {url: 'https://r', token_env: J}", "`cluster_name` is not set"),
        (", cluster_name: c1, execution_mode: rest, rest_api: {url: 'https://r'}", "names no token"),
        (", cluster_name: c1, execution_mode: rest, rest_api: {token_env: J}", "rest_api.url` is missing"),
        (
            ", cluster_name: c1, execution_mode: rest, rest_api: {url: 'https://r', token_env: J, verify_ssl: false}",
            "always verifies",
        ),
    ] {
        let e = config(&format!("{base}{settings}}}\n")).unwrap_err();
        let msgs = errors(&e).join("\n");
        assert!(msgs.contains(says), "missing {says:?} in\n{msgs}");
    }
}
