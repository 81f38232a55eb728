//! Bearer tokens per tenant: a tenant's token reads and writes its own repository and no
//! other; no token or an unknown one is 401, another tenant's is 403.

mod common;

use cairn_server::{Config, Repos, ServerOptions};
use common::{code, start, Client};

#[test]
fn a_token_opens_its_own_tenant_only() {
    let root = tempfile::tempdir().unwrap();
    for tenant in ["alpha", "beta"] {
        let repo = cairn::Repo::init(root.path().join(tenant)).unwrap();
        let line = format!("{{\"node\": {{\"id\": \"secret-{tenant}\", \"text\": \"{tenant} only\"}}}}");
        repo.import_jsonl(line.as_bytes(), "seed", &mut |_| {}).unwrap();
    }
    let mut config = Config::default();
    let alpha = config.add_token("alpha").unwrap();
    let beta = config.add_token("beta").unwrap();
    // The config holds hashes, never the tokens.
    let text = serde_json::to_string(&config).unwrap();
    assert!(!text.contains(&alpha) && !text.contains(&beta));

    let options = ServerOptions {
        config: Some(config),
        ..ServerOptions::default()
    };
    let server = start(Repos::Root(root.path().to_path_buf()), options);
    let a = Client::new(&server).with_token(&alpha);
    let b = Client::new(&server).with_token(&beta);
    let anonymous = Client::new(&server);
    let forged = Client::new(&server).with_token("cairn_0000");

    assert_eq!(a.json("/t/alpha/nodes/secret-alpha")["text"], "alpha only");
    assert_eq!(b.json("/t/beta/nodes/secret-beta")["text"], "beta only");
    a.post_json("/t/alpha/import", "{\"node\": {\"id\": \"more\"}}");

    let reads: &[(&str, &str, Option<&str>)] = &[
        ("GET", "/t/beta/nodes/secret-beta", None),
        ("GET", "/t/beta/log", None),
        ("GET", "/t/beta/stats", None),
        ("POST", "/t/beta/retrieve", Some(r#"{"text": "beta"}"#)),
        ("POST", "/t/beta/import", Some("{\"node\": {\"id\": \"intruder\"}}")),
        ("GET", "/t/gamma/log", None),
    ];
    for (method, path, body) in reads {
        let (status, text) = a.call(method, path, *body);
        assert_eq!(
            (status, code(&text).as_str()),
            (403, "forbidden"),
            "{method} {path}: {text}"
        );
        assert!(!text.contains("beta only"));
        for c in [&anonymous, &forged] {
            let (status, text) = c.call(method, path, *body);
            assert_eq!(
                (status, code(&text).as_str()),
                (401, "unauthorized"),
                "{method} {path}: {text}"
            );
        }
    }
    // beta's repository is untouched.
    drop(server);
    let beta_repo = cairn::Repo::open(root.path().join("beta")).unwrap();
    assert_eq!(beta_repo.log(None, None).unwrap().len(), 1);

    // health and metrics need no token.
    let server = start(
        Repos::Root(root.path().to_path_buf()),
        ServerOptions {
            config: Some(Config::default()),
            ..ServerOptions::default()
        },
    );
    assert_eq!(Client::new(&server).get("/health").0, 200);
    assert_eq!(Client::new(&server).get("/metrics").0, 200);
    let (status, text) = Client::new(&server).get("/t/alpha/log");
    assert_eq!((status, code(&text).as_str()), (401, "unauthorized"));
}

#[test]
fn unknown_tenants_are_not_found_without_auth() {
    let root = tempfile::tempdir().unwrap();
    cairn::Repo::init(root.path().join("one")).unwrap();
    let server = start(Repos::Root(root.path().to_path_buf()), ServerOptions::default());
    let c = Client::new(&server);
    assert_eq!(c.json("/t/one/log"), serde_json::json!([]));
    for path in ["/t/two/log", "/t/..%2Fetc/log", "/t/a.b/log"] {
        let (status, text) = c.get(path);
        assert_eq!((status, code(&text).as_str()), (404, "not_found"), "{path}: {text}");
    }
}

#[test]
fn config_files_round_trip_and_refuse_bad_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.json");
    let mut config = Config::load_or_default(&path).unwrap();
    let token = config.add_token("team-1").unwrap();
    config.save(&path).unwrap();
    let loaded = Config::load(&path).unwrap();
    assert_eq!(loaded.tenant_of(&token), Some("team-1"));
    assert!(Config::parse(r#"{"tenants": {"x": {"tokens": ["plain-token"]}}}"#).is_err());
    assert!(Config::parse(r#"{"tenants": {"../x": {"tokens": []}}}"#).is_err());
    assert!(Config::parse(r#"{"tenant": {}}"#).is_err());
    assert!(config.add_token("no/slash").is_err());
}
