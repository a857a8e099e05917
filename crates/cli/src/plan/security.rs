//! TLS and credentials: from the flags, else from each scenario's `[cluster]` settings; a
//! user's password from the flag, `ETCDLAT_PASSWORD` or the terminal, never from a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use etcdlat_core::Scenario;
use etcdlat_driver::{Credentials, Security, TlsOptions};

use crate::command_line::Global;

/// TLS and credentials from the flags. `--user name` without a password takes it from
/// `env_password` (ETCDLAT_PASSWORD), else from `prompt` (the terminal).
pub fn from_flags(
    g: &Global,
    env_password: Option<String>,
    prompt: impl FnOnce(&str) -> std::io::Result<String>,
) -> Result<Security> {
    let tls = TlsOptions {
        ca: g.cacert.clone(),
        cert: g.cert.clone(),
        key: g.key.clone(),
        insecure_skip_verify: g.insecure_skip_tls_verify,
    };
    if tls.cert.is_some() != tls.key.is_some() {
        bail!("--cert and --key: give both or neither");
    }
    if let Some((flag, path)) =
        missing_file([("--cacert", &tls.ca), ("--cert", &tls.cert), ("--key", &tls.key)])
    {
        bail!("{flag} {}: no such file", path.display());
    }
    let credentials = match g.user.as_deref() {
        None => None,
        Some(text) => {
            let (user, password) = match text.split_once(':') {
                Some((user, password)) => (user, Some(password.to_owned())),
                None => (text, None),
            };
            if user.is_empty() {
                bail!("--user: no user name before the ':'");
            }
            let password = match password.or(env_password) {
                Some(p) => p,
                None => prompt(user).map_err(|e| {
                    anyhow!(
                        "--user {user}: no password (give user:password, set ETCDLAT_PASSWORD, \
                         or run on a terminal to be asked): {e}"
                    )
                })?,
            };
            Some(Credentials::new(user, password))
        }
    };
    Ok(Security { tls, credentials })
}

/// The first of the TLS `files` (each named for the error) that is given but is not a file.
pub fn missing_file<'a>(files: [(&'a str, &'a Option<PathBuf>); 3]) -> Option<(&'a str, &'a Path)> {
    files
        .into_iter()
        .find_map(|(name, path)| path.as_deref().filter(|p| !p.is_file()).map(|p| (name, p)))
}

/// Each scenario's TLS and credentials: the flags' where the command line gives them
/// (`flags`), else the scenario's `[cluster]` settings. A scenario's user gets its password
/// from `env_password` (ETCDLAT_PASSWORD), else from `prompt`, asked once per user.
pub fn per_scenario(
    flags: &Security,
    scenarios: &[Scenario],
    env_password: Option<&str>,
    mut prompt: impl FnMut(&str) -> std::io::Result<String>,
) -> Result<Vec<Security>> {
    let mut passwords: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        let c = &s.cluster;
        let tls = if flags.tls.is_set() {
            flags.tls.clone()
        } else {
            TlsOptions {
                ca: c.cacert.clone(),
                cert: c.cert.clone(),
                key: c.key.clone(),
                insecure_skip_verify: c.insecure_skip_tls_verify,
            }
        };
        let credentials = match (&flags.credentials, &c.user) {
            (Some(credentials), _) => Some(credentials.clone()),
            (None, None) => None,
            (None, Some(user)) => {
                let password = match (passwords.get(user), env_password) {
                    (Some(known), _) => known.clone(),
                    (None, Some(env)) => env.to_owned(),
                    (None, None) => prompt(user).map_err(|e| {
                        anyhow!(
                            "scenario {}: cluster.user {user}: no password (set \
                             ETCDLAT_PASSWORD, or run on a terminal to be asked): {e}",
                            s.name
                        )
                    })?,
                };
                passwords.insert(user.clone(), password.clone());
                Some(Credentials::new(user, password))
            }
        };
        out.push(Security { tls, credentials });
    }
    Ok(out)
}

/// Asks for `user`'s password on the terminal, without echo.
pub fn ask_password(user: &str) -> std::io::Result<String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(std::io::Error::other("not a terminal"));
    }
    rpassword::prompt_password(format!("Password for {user}: "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_line::Cli;

    #[test]
    fn passwords_come_from_the_flag_the_environment_or_the_terminal() {
        let global = |user: &str| {
            let cli = Cli::parse_args(["etcdlat", "--user", user, "put"]).unwrap();
            cli.global
        };
        let never = |_: &str| -> std::io::Result<String> { panic!("asked the terminal") };
        let s = from_flags(&global("root:pw:with:colons"), Some("env".into()), never).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "pw:with:colons")));
        let s = from_flags(&global("root"), Some("from-env".into()), never).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "from-env")));
        let s = from_flags(&global("root"), None, |user| Ok(format!("typed-for-{user}"))).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "typed-for-root")));
        let e = from_flags(&global("root"), None, |_| Err(std::io::Error::other("not a terminal")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--user root: no password"), "{e}");
        assert!(!format!("{s:?}").contains("typed-for-root"), "Debug hides the password");
    }

    #[test]
    fn scenarios_carry_tls_and_a_user_and_flags_replace_them() {
        let s = Scenario::from_toml_str(
            "[cluster]\ncacert = \"/ca.pem\"\nuser = \"alice\"\n[load]\ntotal = 1\n[op.put]\n",
        )
        .unwrap();
        let scenarios = [s.clone(), s];
        let mut asked = Vec::new();
        let out = per_scenario(&Security::default(), &scenarios, None, |user| {
            asked.push(user.to_owned());
            Ok("typed".to_owned())
        })
        .unwrap();
        assert_eq!(asked, ["alice"], "asked once per user");
        assert_eq!(out[1].tls.ca.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(out[1].credentials, Some(Credentials::new("alice", "typed")));

        let never = |_: &str| -> std::io::Result<String> { panic!("asked the terminal") };
        let out = per_scenario(&Security::default(), &scenarios, Some("env"), never).unwrap();
        assert_eq!(out[0].credentials, Some(Credentials::new("alice", "env")));

        let flags = Security {
            tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
            credentials: Some(Credentials::new("bob", "pw")),
        };
        let out = per_scenario(&flags, &scenarios, None, never).unwrap();
        assert_eq!(out[0], flags, "flags replace the scenario's TLS and user");
    }
}
