//! A Kerberized Spindle cluster with a real MIT KDC (`integration/src/kdc.rs`):
//! the NodeManager registers with its keytab, Hadoop's own `yarn` CLI with a
//! `kinit` ticket lists it, and the same CLI without a ticket, or as another
//! user than it logged in as, is refused with Hadoop's words.
//!
//! One test function: MIT's library (in the test and in the daemons it
//! starts) reads the realm from the process environment.

use std::time::Duration;

use spindle_integration::kdc::{self, Kdc, REALM};
use spindle_integration::process::run_with_timeout;
use spindle_integration::{wait_for, Cluster, HadoopClients};

fn java_opts(kdc: &Kdc) -> String {
    kdc.java_opts()
}

#[test]
fn the_stock_cli_with_a_ticket_is_served_by_a_kerberized_cluster_and_refused_without() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(kdc) = kdc::for_test() else {
        return;
    };
    let host = kdc::machine_host();
    // The RM is dialled as 127.0.0.1, whose canonical name the Java client
    // looks up (localhost); the NM's _HOST is the machine's host name, as
    // Hadoop's SecurityUtil.login gives it.
    let rm_keytab = kdc.keytab_for("rm/localhost").expect("rm keytab");
    let nm_keytab = kdc.keytab_for(&format!("nm/{host}")).expect("nm keytab");
    let alice_keytab = kdc.keytab_for("alice").expect("alice keytab");
    // The webs' SPNEGO principal: clients name the server they dial.
    let http_keytab = kdc.keytab_for("HTTP/localhost").expect("HTTP keytab");
    // The NodeManager's web is dialled by its address (127.0.0.2), its own
    // SPNEGO principal (yarn.nodemanager.webapp.spnego-*).
    let nm_http_keytab = kdc.keytab_for("HTTP/127.0.0.2").expect("NM HTTP keytab");
    let caches = tempfile::tempdir().expect("tempdir");
    let cache = caches.path().join("alice.cc");
    kdc.kinit("alice", &alice_keytab, &cache).expect("kinit");

    let cluster = Cluster::builder()
        .nodemanagers(1)
        .core_property("hadoop.security.authentication", "kerberos")
        // Service-level authorization, every protocol open to all until
        // hadoop-policy.xml says otherwise (service_acls below); the
        // NodeManager's registration is checked against its principal.
        .core_property("hadoop.security.authorization", true)
        // SPNEGO on the RM's and NM's webs.
        .core_property("hadoop.http.authentication.type", "kerberos")
        .core_property(
            "hadoop.http.authentication.kerberos.principal",
            format!("HTTP/localhost@{REALM}"),
        )
        .core_property(
            "hadoop.http.authentication.kerberos.keytab",
            http_keytab.display(),
        )
        .rm_property(
            "yarn.nodemanager.webapp.spnego-principal",
            format!("HTTP/127.0.0.2@{REALM}"),
        )
        .rm_property(
            "yarn.nodemanager.webapp.spnego-keytab-file",
            nm_http_keytab.display(),
        )
        // alice is the cluster's administrator under another name: the
        // admin ACL sees the short name auth_to_local gives.
        .core_property(
            "hadoop.security.auth_to_local",
            format!("RULE:[1:$1@$0](alice@{REALM})s/.*/ops/ DEFAULT"),
        )
        .rm_property("yarn.admin.acl", "ops")
        .rm_property(
            "yarn.resourcemanager.principal",
            format!("rm/localhost@{REALM}"),
        )
        .rm_property("yarn.resourcemanager.keytab", rm_keytab.display())
        .rm_property("yarn.nodemanager.principal", format!("nm/_HOST@{REALM}"))
        .rm_property("yarn.nodemanager.keytab", nm_keytab.display())
        .start(&clients)
        .expect("the Kerberized cluster starts");

    let with_ticket = || {
        cluster
            .yarn_command()
            .env("YARN_OPTS", java_opts(&kdc))
            .env("KRB5CCNAME", format!("FILE:{}", cache.display()))
    };

    // The NM registered over Kerberos; alice's ticket lists it.
    let listed = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        let out = with_ticket().run(["node", "-list"]).expect("the CLI runs");
        (out.success() && out.stdout.contains("RUNNING")).then_some(out)
    });
    let Some(listed) = listed else {
        let out = with_ticket().run(["node", "-list"]).expect("the CLI runs");
        panic!(
            "no RUNNING node listed with a ticket:\n{out}\n{}",
            cluster.log_report()
        );
    };
    assert!(listed.stdout.contains("Total Nodes:1"), "{listed}");
    let apps = with_ticket()
        .run(["application", "-list", "-appStates", "ALL"])
        .expect("the CLI runs");
    assert!(apps.success(), "{apps}\n{}", cluster.log_report());

    // Spindle's own client with alice's ticket: submission on the client
    // port (Kerberos), the AM started on the node (tokens), containers
    // asked for and run (AMRM and NM tokens) under a Kerberized cluster.
    let mut dshell = std::process::Command::new(cluster.binary());
    dshell
        .arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--num-containers", "1", "--timeout-secs", "120"])
        .args(["--command", "echo hello from $CONTAINER_ID"])
        .env("KRB5CCNAME", format!("FILE:{}", cache.display()));
    let out = run_with_timeout(dshell, Duration::from_secs(180)).expect("distributed-shell runs");
    assert!(
        out.success(),
        "distributed-shell with a ticket failed:\n{out}\n{}",
        cluster.log_report()
    );
    let apps = with_ticket()
        .run(["application", "-list", "-appStates", "FINISHED"])
        .expect("the CLI runs");
    // The application belongs to the short name of alice's principal.
    let row: Vec<&str> = apps
        .stdout
        .lines()
        .find(|l| l.contains("DistributedShell"))
        .unwrap_or_else(|| panic!("no DistributedShell row:\n{apps}"))
        .split_whitespace()
        .collect();
    assert_eq!(row.get(3), Some(&"ops"), "the user column: {apps}");

    // The admin ACL names "ops": alice's principal maps to it.
    let refresh = with_ticket()
        .run(["rmadmin", "-refreshNodes"])
        .expect("the CLI runs");
    assert!(refresh.success(), "{refresh}\n{}", cluster.log_report());
    // bob maps to bob under DEFAULT, and is no administrator.
    let bob_keytab = kdc.keytab_for("bob").expect("bob keytab");
    let bob_cache = caches.path().join("bob.cc");
    kdc.kinit("bob", &bob_keytab, &bob_cache)
        .expect("kinit bob");
    let refused = cluster
        .yarn_command()
        .env("YARN_OPTS", java_opts(&kdc))
        .env("KRB5CCNAME", format!("FILE:{}", bob_cache.display()))
        .run(["rmadmin", "-refreshNodes"])
        .expect("the CLI runs");
    assert!(!refused.success(), "{refused}");
    assert!(
        refused
            .stderr
            .contains("User bob doesn't have permission to call 'refreshNodes'"),
        "{refused}"
    );

    // No ticket: Hadoop's client has no Kerberos login to offer.
    let empty_cache = caches.path().join("none.cc");
    let out = cluster
        .yarn_command()
        .env("YARN_OPTS", java_opts(&kdc))
        .env("KRB5CCNAME", format!("FILE:{}", empty_cache.display()))
        .run(["application", "-list"])
        .expect("the CLI runs");
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr
            .contains("Client cannot authenticate via:[TOKEN, KERBEROS]"),
        "{out}"
    );

    // alice's ticket naming another user (HADOOP_PROXY_USER) is a proxy
    // user, which this cluster does not allow yet.
    let as_proxy = |user: &str, args: &[&str]| {
        with_ticket()
            .env("HADOOP_PROXY_USER", user)
            .run(args)
            .expect("the CLI runs")
    };
    let out = as_proxy("bob", &["application", "-list"]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "User: alice@{REALM} is not allowed to impersonate bob"
        )),
        "{out}"
    );

    // Proxy-user rules for alice's short name (ops), put in force by
    // -refreshSuperUserGroupsConfiguration: she may act for bob from here.
    let mut core = cluster.core_site().clone();
    core.set("hadoop.proxyuser.ops.users", "bob");
    core.set("hadoop.proxyuser.ops.hosts", "127.0.0.1");
    core.write(&cluster.conf_dir().join("core-site.xml"))
        .expect("core-site");
    let refresh = with_ticket()
        .run(["rmadmin", "-refreshSuperUserGroupsConfiguration"])
        .expect("the CLI runs");
    assert!(refresh.success(), "{refresh}\n{}", cluster.log_report());
    let out = as_proxy("bob", &["application", "-list"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    // The call runs as bob, who is no administrator.
    let out = as_proxy("bob", &["rmadmin", "-refreshNodes"]);
    assert!(
        out.stderr
            .contains("User bob doesn't have permission to call 'refreshNodes'"),
        "{out}"
    );
    // Not for carol, and not from another address.
    let out = as_proxy("carol", &["application", "-list"]);
    assert!(
        out.stderr.contains(&format!(
            "User: alice@{REALM} is not allowed to impersonate carol"
        )),
        "{out}"
    );
    core.set("hadoop.proxyuser.ops.hosts", "10.0.0.0/8");
    core.write(&cluster.conf_dir().join("core-site.xml"))
        .expect("core-site");
    let refresh = with_ticket()
        .run(["rmadmin", "-refreshSuperUserGroupsConfiguration"])
        .expect("the CLI runs");
    assert!(refresh.success(), "{refresh}");
    let out = as_proxy("bob", &["application", "-list"]);
    assert!(
        out.stderr.contains(&format!(
            "Unauthorized connection for super-user: alice@{REALM} from IP 127.0.0.1"
        )),
        "{out}"
    );

    delegation_tokens(&cluster, &clients, &kdc, &cache, &bob_cache, &empty_cache);
    service_acls(&cluster, &kdc, &cache, &bob_cache);
}

/// `hadoop-policy.xml` put in force by `yarn rmadmin -refreshServiceAcl`:
/// the client protocol for alice (ops) only; bob is refused with Hadoop's
/// words, the administrator keeps the admin protocol.
fn service_acls(cluster: &Cluster, kdc: &Kdc, alice: &std::path::Path, bob: &std::path::Path) {
    let as_user = |cache: &std::path::Path, args: &[&str]| {
        cluster
            .yarn_command()
            .env("YARN_OPTS", java_opts(kdc))
            .env("KRB5CCNAME", format!("FILE:{}", cache.display()))
            .run(args)
            .expect("the CLI runs")
    };
    std::fs::write(
        cluster.conf_dir().join("hadoop-policy.xml"),
        "<configuration>\n\
         <property><name>security.applicationclient.protocol.acl</name><value>ops</value></property>\n\
         </configuration>\n",
    )
    .expect("hadoop-policy.xml");
    let out = as_user(alice, &["rmadmin", "-refreshServiceAcl"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let out = as_user(bob, &["application", "-list"]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "User bob@{REALM} (auth:KERBEROS) is not authorized for protocol interface \
             org.apache.hadoop.yarn.api.ApplicationClientProtocolPB: denied by configured ACL"
        )),
        "{out}"
    );
    let out = as_user(alice, &["application", "-list"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    // The NodeManager's registration passed the resource tracker's check
    // (its principal's host names its address) and it keeps heartbeating.
    let out = as_user(alice, &["node", "-list"]);
    assert!(out.stdout.contains("RUNNING"), "{out}");

    spnego_web(cluster, alice, bob);
}

/// `curl` as a SPNEGO client (Debian's curl has GSS-API): the web.
fn curl(cache: &std::path::Path, args: &[&str]) -> (u16, String) {
    let mut command = std::process::Command::new("curl");
    command
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .env("KRB5CCNAME", format!("FILE:{}", cache.display()));
    let out = run_with_timeout(command, Duration::from_secs(60)).expect("curl runs");
    let (body, code) = out
        .stdout
        .trim_end()
        .rsplit_once('\n')
        .unwrap_or(("", &out.stdout));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// SPNEGO on the RM's web: no ticket, 401 and a Negotiate challenge; with
/// a ticket (`curl --negotiate`) served as the ticket's short name, which
/// replaces any `user.name` given; the `hadoop.auth` cookie it sets lets
/// the next request in without a ticket. With authorization on, /logLevel
/// is for administrators (Hadoop's HttpServer2.hasAdministratorAccess).
fn spnego_web(cluster: &Cluster, alice: &std::path::Path, bob: &std::path::Path) {
    let port = cluster.rm().webapp.port();
    let url = |path: &str| format!("http://localhost:{port}{path}");
    let nobody = std::path::Path::new("/nonexistent/no-ticket.cc");
    let (code, _) = curl(nobody, &[&url("/ws/v1/cluster/info")]);
    assert_eq!(code, 401);
    let (code, headers) = curl(
        nobody,
        &["-D", "-", "-o", "/dev/null", &url("/ws/v1/cluster/info")],
    );
    assert_eq!(code, 401);
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("www-authenticate: negotiate"),
        "{headers}"
    );
    let (code, body) = curl(
        alice,
        &["--negotiate", "-u", ":", &url("/ws/v1/cluster/info")],
    );
    assert_eq!(code, 200, "{body}\n{}", cluster.log_report());
    assert!(body.contains("clusterInfo"), "{body}");
    // bob's ticket: user.name=ops does not make him ops.
    let (code, body) = curl(
        bob,
        &[
            "--negotiate",
            "-u",
            ":",
            &url("/logLevel?log=spindle_rm&user.name=ops"),
        ],
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("User bob is unauthorized to access this page."),
        "{body}"
    );
    let jar = tempfile::NamedTempFile::new().expect("cookie jar");
    let jar = jar.path().display().to_string();
    let (code, body) = curl(
        alice,
        &[
            "--negotiate",
            "-u",
            ":",
            "-c",
            &jar,
            &url("/logLevel?log=spindle_rm&user.name=bob"),
        ],
    );
    assert_eq!(code, 200, "{body}");
    // The cookie alone, no ticket.
    let (code, body) = curl(nobody, &["-b", &jar, &url("/ws/v1/cluster/apps")]);
    assert_eq!(code, 200, "{body}");
    // Delegation tokens over REST, for a SPNEGO caller only.
    let (code, body) = curl(
        alice,
        &[
            "--negotiate",
            "-u",
            ":",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            &format!("{{\"renewer\":\"alice@{REALM}\"}}"),
            &url("/ws/v1/cluster/delegation-token"),
        ],
    );
    assert_eq!(code, 200, "{body}\n{}", cluster.log_report());
    let token: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(token["kind"], "RM_DELEGATION_TOKEN", "{body}");
    assert_eq!(token["owner"], format!("alice@{REALM}"), "{body}");
    let header = format!(
        "Hadoop-YARN-RM-Delegation-Token: {}",
        token["token"].as_str().expect("a token")
    );
    let with_token = |cache: &std::path::Path, method: &str, path: &str| {
        curl(
            cache,
            &[
                "--negotiate",
                "-u",
                ":",
                "-X",
                method,
                "-H",
                &header,
                &url(path),
            ],
        )
    };
    let (code, body) = with_token(alice, "POST", "/ws/v1/cluster/delegation-token/expiration");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("expiration-time"), "{body}");
    let (code, body) = with_token(bob, "POST", "/ws/v1/cluster/delegation-token/expiration");
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("bob tries to renew a token"), "{body}");
    let (code, body) = with_token(alice, "DELETE", "/ws/v1/cluster/delegation-token");
    assert_eq!(code, 200, "{body}");
    let (code, body) = with_token(alice, "POST", "/ws/v1/cluster/delegation-token/expiration");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("Renewal request for unknown token"), "{body}");

    // The NodeManager's web asks the same.
    let nm = cluster.nodemanager(0);
    assert!(nm.address().starts_with("127.0.0.2:"), "{}", nm.address());
    let nm_url = format!("http://127.0.0.2:{}/ws/v1/node/info", nm.web_port());
    let (code, _) = curl(nobody, &[&nm_url]);
    assert_eq!(code, 401);
    let (code, body) = curl(alice, &["--negotiate", "-u", ":", &nm_url]);
    assert_eq!(code, 200, "{body}");
}

/// RM delegation tokens through Hadoop's own client classes (`RmToken.java`)
/// and the stock CLI: alice's ticket gets one naming herself as renewer; a
/// process with only the token file and no ticket is served as alice; the
/// renewer renews it, bob may neither renew nor cancel it, a token cannot
/// beget another, and once alice cancels it the token is refused.
fn delegation_tokens(
    cluster: &Cluster,
    clients: &HadoopClients,
    kdc: &Kdc,
    alice: &std::path::Path,
    bob: &std::path::Path,
    nobody: &std::path::Path,
) {
    let classes = clients
        .compile_java("RmToken")
        .unwrap_or_else(|e| panic!("cannot compile RmToken: {e:#}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rm.token");
    let file_arg = file.display().to_string();
    let rm_token = |cache: &std::path::Path, token_file: bool, args: &[&str]| {
        let mut command = cluster
            .yarn_command()
            .classpath(classes.clone())
            .env("YARN_OPTS", java_opts(kdc))
            .env("KRB5CCNAME", format!("FILE:{}", cache.display()));
        if token_file {
            command = command.env("HADOOP_TOKEN_FILE_LOCATION", &file_arg);
        }
        let mut full = vec!["RmToken"];
        full.extend_from_slice(args);
        command.run(&full).expect("RmToken runs")
    };

    // alice's principal maps to "ops": the renewer is kept by short name.
    let renewer = format!("alice@{REALM}");
    let out = rm_token(
        alice,
        false,
        &["fetch", "--renewer", &renewer, "--out", &file_arg],
    );
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    assert!(
        out.stdout.contains(&format!(
            "owner=alice@{REALM} renewer=ops realUser= kind=RM_DELEGATION_TOKEN"
        )),
        "{out}"
    );

    // No ticket, only the token: the stock CLI is served (by TOKEN).
    let with_token = |args: &[&str]| {
        cluster
            .yarn_command()
            .env("YARN_OPTS", java_opts(kdc))
            .env("KRB5CCNAME", format!("FILE:{}", nobody.display()))
            .env("HADOOP_TOKEN_FILE_LOCATION", &file_arg)
            .run(args)
            .expect("the CLI runs")
    };
    let out = with_token(&["application", "-list", "-appStates", "FINISHED"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    assert!(out.stdout.contains("DistributedShell"), "{out}");
    // A token does not beget tokens.
    let out = rm_token(
        nobody,
        true,
        &["fetch", "--renewer", "ops", "--out", "/dev/null"],
    );
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr
            .contains("Delegation Token can be issued only with kerberos authentication"),
        "{out}"
    );

    // alice (ops) renews; bob may not renew or cancel.
    let out = rm_token(alice, false, &["renew", "--in", &file_arg]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let expires: i64 = out
        .stdout
        .trim()
        .strip_prefix("expires=")
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("no expiry: {out}"));
    assert!(expires > spindle_common::time::wall_ms(), "{out}");
    let out = rm_token(bob, false, &["renew", "--in", &file_arg]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr
            .contains("bob tries to renew a token (owner=alice@")
            && out.stderr.contains("with non-matching renewer ops"),
        "{out}"
    );
    let out = rm_token(bob, false, &["cancel", "--in", &file_arg]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains(&format!(
            "bob@{REALM} is not authorized to cancel the token (owner=alice@"
        )),
        "{out}"
    );

    // alice cancels it: the token no longer opens the RM.
    let out = rm_token(alice, false, &["cancel", "--in", &file_arg]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let out = with_token(&["application", "-list"]);
    assert!(!out.success(), "{out}");
    assert!(out.stderr.contains("can't be found in cache"), "{out}");
}
